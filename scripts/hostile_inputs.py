"""Try the hostile-input cases and print the outcome table (orbitlab/robustness).

python scripts/hostile_inputs.py                         # all classes (a few minutes)
python scripts/hostile_inputs.py --details               # or details=true: one line a case
python scripts/hostile_inputs.py classes=bridge,physics per_class=3
"""

import sys

from orbitlab.robustness.run import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
