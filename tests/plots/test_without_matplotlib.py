"""Without matplotlib (an extra: ``pip install -e '.[plots]'``), ``python -m plots``
says what to install instead of a traceback."""

import subprocess
import sys

from checkout import ROOT

# matplotlib made unimportable, whether or not it is installed.
WITHOUT_MATPLOTLIB = ("import runpy, sys; sys.modules['matplotlib'] = None; "
                      "sys.argv = ['plots', 'results.jsonl']; runpy.run_module('plots', run_name='__main__')")


def test_python_m_plots_names_what_to_install():
    done = subprocess.run([sys.executable, "-c", WITHOUT_MATPLOTLIB], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 1
    assert done.stderr.strip() == ("python -m plots draws with matplotlib, which is not installed here: "
                                   "pip install -e '.[plots]' (or pip install matplotlib)")
