#!/bin/sh
# Copy Triton 3.6's language tests out of a Triton git checkout (any clone that has the commit) into DIR.
# Triton 3.6.0's release branch left main at fc9e3a637 (2025-11-30): its python/ sources equal the wheel's
# but for a few cherry-picks, so these are the tests of the installed wheel.
#   sh tools/triton_suite/get_tests.sh /path/to/triton /tmp/triton_tests
set -e
SRC=$1; DIR=$2; REV=${REV:-fc9e3a637}
mkdir -p "$DIR"
for f in test_core.py test_standard.py test_random.py test_libdevice.py test_block_pointer.py test_tuple.py; do
  git -C "$SRC" show "$REV:python/test/unit/language/$f" > "$DIR/$f"
done
cp "$(dirname "$0")/conftest.py" "$DIR/"
echo "tests in $DIR; run: cd $DIR && WARPEMU_TRITON=1 TRITON_SUITE_IDS=$(cd "$(dirname "$0")" && pwd)/ids.txt pytest --device cpu test_*.py"
