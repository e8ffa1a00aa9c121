#!/usr/bin/env bash
# docs/flags.md is what the binaries' --help says (scripts/flags-reference.sh): a flag added or
# changed without the page written anew fails here.
#   flags_reference_test.sh BIN_DIR SOURCE_DIR
set -euo pipefail
bin=$1
src=$2
if ! diff -u "$src/docs/flags.md" <(bash "$src/scripts/flags-reference.sh" "$bin"); then
  echo "FAIL: docs/flags.md differs from the binaries' --help: run scripts/update-flags-reference.sh and commit it" >&2
  exit 1
fi
echo "docs/flags.md matches the binaries' --help"
