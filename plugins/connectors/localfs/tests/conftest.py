import sys
from pathlib import Path

# the test helpers of this plugin (localfs_*.py) import as top-level modules
sys.path.insert(0, str(Path(__file__).parent))
