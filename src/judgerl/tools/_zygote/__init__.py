"""The sandbox zygote: stdlib-only code that runs *inside* the sandbox (never imported by judgerl).

The host starts ``python -I -S -B -c <bootstrap>``, which puts this package's parent directory on
``sys.path``, imports :mod:`_zygote.main` and removes the path again, so runs cannot import the
host's modules. Inside bubblewrap the package's files are copied into the sandbox's read-only
root (``bwrap --file``), so no host path of the repository is mounted or shown in
``/proc/self/mountinfo``.
"""
