"""Verifiers that decide correctness automatically: math answer equivalence and code tests.

Submodules are imported lazily by their users (``judgerl.verify.math``, ``judgerl.verify.code``)
so importing this package stays cheap (worker processes of the math verifier import it too).
"""
