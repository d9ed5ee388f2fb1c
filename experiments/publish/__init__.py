"""A versioned release of results (docs/release.md): the per-run table, the curves and a
manifest with the files' checksums, built from results folders (``udora release build``),
read back only when every checksum matches, and the page docs/leaderboard.md generated
from it (``udora release page``)."""
