#!/usr/bin/env bash
# Fetches Mermaid, pinned by version and checksum, into book/mermaid.min.js, which the book's
# pages load (book.toml, additional-js) to draw the diagrams the code generates: the package
# from the npm registry, its one self-contained script checked against the digest below, so a
# changed file is refused rather than served. Run once before `mdbook build book`.
set -euo pipefail
cd "$(dirname "$0")"
version=12.3.0
digest=336df803d87a38b70a01e736e666c8f7601d2ce42f5e47c8fafe5d721074b9a3
if [ -f mermaid.min.js ] && echo "$digest  mermaid.min.js" | sha256sum -c --quiet 2>/dev/null; then
    exit 0
fi
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
(cd "$scratch" && npm pack --silent "mermaid@$version" >/dev/null &&
    tar -xzf "mermaid-$version.tgz" package/dist/mermaid.min.js)
echo "$digest  $scratch/package/dist/mermaid.min.js" | sha256sum -c --quiet ||
    { echo "mermaid $version: its script does not match the pinned digest" >&2; exit 1; }
mv "$scratch/package/dist/mermaid.min.js" mermaid.min.js
