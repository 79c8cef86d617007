"""Where the checkout under test is: the one place tests compute it."""

import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
