import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
# the fast engine's loops compile in the test process at first use (no background compile process left behind)
os.environ.setdefault("WARPEMU_BACKGROUND_COMPILE", "0")
