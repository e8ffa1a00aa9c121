#!/usr/bin/env bash
# The layer rule on the archives themselves: the transport-free libraries (ingest, fleet,
# query, and the api/ and proto message libraries below them) define and reference no gRPC
# and no cpp-httplib symbol, so no core class can grow a transport dependency unnoticed.
#   check_layers.sh ARCHIVE...
set -euo pipefail
status=0
for archive in "$@"; do
  hits=$(nm -C "$archive" 2>/dev/null | grep -E '(^|[^A-Za-z0-9_])(grpc|grpc_impl|httplib)::|[^A-Za-z0-9_]_?grpc_[a-z]' | sort -u | head -5 || true)
  if [[ -n "$hits" ]]; then
    echo "FAIL $(basename "$archive") reaches a transport:"
    echo "$hits" | sed 's/^/    /'
    status=1
  else
    echo "ok   $(basename "$archive"): no gRPC or httplib symbol ($(nm "$archive" | wc -l) symbols)"
  fi
done
exit $status
