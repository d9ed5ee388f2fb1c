"""Compare a part's rows with the classification protocol's earlier rows (commit bb6e49e)
on the same (preset, method, seed): the largest absolute difference per method over the
metrics both have. Usage: python compare.py PART OLD_PARQUET"""
import sys

import numpy as np
import pandas as pd

part = pd.read_parquet(f"{sys.argv[1]}/results.parquet")
old = pd.read_parquet(sys.argv[2])
part = part[part["method_seed"].isna()] if "method_seed" in part else part
key = ["preset", "method", "seed"]
old = old[old["preset"].isin(part["preset"].unique())]
both = part.merge(old, on=key, suffixes=("", "_old"))
metrics = [c for c in part.columns if c + "_old" in both and part[c].dtype.kind == "f"
           and not c.startswith(("time_", "se.", "version"))]
print(f"{len(both)} rows matched of {len(part)} new, {len(old)} old; {len(metrics)} metrics")
for method, g in both.groupby("method"):
    diff = max(np.nanmax(np.abs(g[m].to_numpy() - g[m + "_old"].to_numpy()), initial=0.0)
               for m in metrics)
    same_task = (g["task_hash"] == g["task_hash_old"]).all()
    same_cfg = (g["config_hash"] == g["config_hash_old"]).all()
    print(f"{method:14s} max |diff| {diff:.3g}  same task {same_task}  same config {same_cfg}")
