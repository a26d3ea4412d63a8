"""``python -m privbandits``: the ``privbandits`` command, for a Python whose scripts folder is not on the PATH."""

from privbandits.cli import app

app(prog_name="privbandits")
