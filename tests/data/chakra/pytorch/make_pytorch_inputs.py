"""Write minimal PyTorch host + device execution traces for Chakra's converter.

Eight ranks in two tensor-parallel groups of four (process groups "1" =
ranks 0-3 and "2" = ranks 4-7) and the default group "0" of all ranks. Each
rank's trace has, under the thread root: the ``process_group:init`` record,
a matrix multiply (CPU launch + GPU kernel), an allreduce on the rank's
tensor-parallel group (4096 float32 = 16384 bytes), an element-wise kernel
and an allgather on the default group (1024 float32 = 4096 bytes in). The
node layout follows the JSON the converter parses (schema
``1.0.2-chakra.0.0.4``, as in Chakra's tests/data/1.0.2-chakra.0.0.4.tgz):
``ctrl_deps`` is the caller, ``cat`` marks a GPU kernel, ``pg_name`` the
process group of a collective kernel.

Usage: python make_pytorch_inputs.py OUTDIR  (writes OUTDIR/pytorch_groups.<r>.json)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

RANKS = 8
GROUPS = [
    {"pg_name": "0", "pg_desc": "default_pg", "ranks": [], "group_size": 8},
    {"pg_name": "1", "pg_desc": "tp", "ranks": [0, 1, 2, 3], "group_size": 4},
    {"pg_name": "2", "pg_desc": "tp", "ranks": [4, 5, 6, 7], "group_size": 4},
]


def node(nid, name, parent, dur, ts, *, gpu=False, inputs=None, pg=None):
    values, types = inputs or ([], [])
    out = {
        "id": nid,
        "name": name,
        "ctrl_deps": parent,
        "inputs": {"values": values, "shapes": [[] for _ in values], "types": types},
        "outputs": {"values": [], "shapes": [], "types": []},
        "attrs": [
            {"name": "rf_id", "type": "uint64", "value": nid},
            {"name": "fw_parent", "type": "uint64", "value": 0},
            {"name": "seq_id", "type": "int64", "value": -1},
            {"name": "scope", "type": "uint64", "value": 0},
            {"name": "tid", "type": "uint64", "value": 1},
            {"name": "fw_tid", "type": "uint64", "value": 0},
            {"name": "op_schema", "type": "string", "value": ""},
        ],
        "inclusive_dur": dur,
        "exclusive_dur": dur,
        "ts": ts,
    }
    if gpu:
        out["cat"] = "kernel"
        out["stream"] = 7
    if pg is not None:
        out["pg_name"] = pg
    return out


def tensor(tid, numel):
    return [tid, tid, 0, numel, 4, "cuda:0"]


def trace(rank):
    tp = "1" if rank < 4 else "2"
    nodes = [
        node(1, "[pytorch|profiler|execution_trace|thread]", 0, 0, 0),
        node(
            2,
            "## process_group:init ##",
            1,
            0,
            1,
            inputs=([json.dumps(GROUPS)], ["String"]),
        ),
        node(3, "aten::mm", 1, 4, 10),
        node(4, "sm90_xmma_gemm_f32f32_tn", 3, 100, 12, gpu=True),
        node(5, "c10d::allreduce_", 1, 3, 120),
        node(
            6,
            "ncclDevKernel_AllReduce_Sum_f32_RING_LL",
            5,
            30,
            122,
            gpu=True,
            inputs=([tensor(40, 4096)], ["Tensor(float)"]),
            pg=tp,
        ),
        node(7, "aten::add", 1, 2, 160),
        node(8, "elementwise_kernel", 7, 10, 162, gpu=True),
        node(9, "c10d::allgather_", 1, 3, 180),
        node(
            10,
            "ncclDevKernel_AllGather_RING_LL",
            9,
            20,
            182,
            gpu=True,
            inputs=([tensor(50, 1024)], ["Tensor(float)"]),
            pg="0",
        ),
    ]
    return {
        "schema": "1.0.2-chakra.0.0.4",
        "pid": 1000 + rank,
        "time": "2024-01-01 00:00:00",
        "start_ts": 0,
        "finish_ts": 300,
        "nodes": nodes,
    }


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    for r in range(RANKS):
        (out / f"pytorch_groups.{r}.json").write_text(json.dumps(trace(r), indent=1))


if __name__ == "__main__":
    main()
