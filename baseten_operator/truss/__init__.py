"""Everything about truss pushes (docs/truss.md), without importing truss.

`naming`: the Go-compatible config hash and deployment name, and the names truss cannot take;
`config`: config.yaml and the truss directory; `pusher`: pushes in the background, one child
process each, bounded and with a hard timeout (its metrics in `metrics`); `push_child`: that
child process, the only module that imports the `truss` package (about 100 MB and most of a
second, and it rewrites `os.environ`).

Must not import: `controller`, `baseten`, `sim`, `sandbox`, `cli`, `main`; and no module but
`push_child` may import `truss`. From `runtime` only the clock, the write fence, the metrics
registry and logging's secret masking.
"""

__all__ = ["naming", "pusher"]
