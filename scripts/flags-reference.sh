#!/usr/bin/env bash
# Prints docs/flags.md: every flag of the three binaries, as their own --help says it. The page
# is generated, never hand-kept: scripts/update-flags-reference.sh writes it, and a test
# (tests/e2e/flags_reference_test.sh) fails when the committed page and the binaries differ.
#   scripts/flags-reference.sh BIN_DIR
set -euo pipefail
bin=${1:?usage: flags-reference.sh BIN_DIR}
host=$(hostname)
# Run with an empty environment (no $FLEETPROF_SERVER or $KINETO_* changing a default), and
# this machine's name replaced: the page is the same on every machine.
help_of() {
  env -i PATH=/usr/bin:/bin "$bin/$1" --help | sed "s/(default: ${host})/(default: this host's name)/"
}
cat <<'HEAD'
# Flags reference

Generated from the binaries' own `--help` by `scripts/update-flags-reference.sh`; a test fails
when this page and the binaries differ. What the daemons do with their flags, and how to run
them, is in [operating.md](operating.md); the CLI's commands in [using.md](using.md#cli)
(`fleetprof COMMAND --help` prints one command's flags).
HEAD
for binary in fleetprof-server fleetprof-agent fleetprof; do
  printf '\n## %s\n\n```text\n' "$binary"
  help_of "$binary"
  printf '```\n'
done
