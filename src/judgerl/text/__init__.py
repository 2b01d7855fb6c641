"""Text judgerl did not write, made safe to show a judge and to compare: untrusted text made inert
(:mod:`~judgerl.text.untrusted`), code blocks and interpreter observations
(:mod:`~judgerl.text.codeblocks`), the one table of invisible characters and look-alikes
(:mod:`~judgerl.text.confusables`) and folding with offsets (:mod:`~judgerl.text.normalize`)."""
