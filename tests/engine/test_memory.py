"""Reading the process's memory breakdown from /proc (what ``qwen-desktop bench`` reports besides peak RSS)."""

from __future__ import annotations

import mmap
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qwen_desktop.engine.memory import memory_use, parse_smaps_by_path, parse_smaps_rollup

# /proc/self/smaps_rollup of a process on the development machine (Linux 6.18, AMD EPYC).
ROLLUP = """\
55b083b95000-7ffefa975000 ---p 00000000 00:00 0                          [rollup]
Rss:              917504 kB
Pss:              916880 kB
Pss_Dirty:        155648 kB
Pss_Anon:         155648 kB
Pss_File:         761232 kB
Pss_Shmem:             0 kB
Shared_Clean:       1488 kB
Shared_Dirty:          0 kB
Private_Clean:    760368 kB
Private_Dirty:    155648 kB
Referenced:       917504 kB
Anonymous:        155648 kB
KSM:                   0 kB
LazyFree:              0 kB
AnonHugePages:         0 kB
ShmemPmdMapped:        0 kB
FilePmdMapped:         0 kB
Shared_Hugetlb:        0 kB
Private_Hugetlb:       0 kB
Swap:                  0 kB
SwapPss:               0 kB
Locked:                0 kB
"""

# /proc/self/status of the same machine (tab after the colon), the fallback for kernels before 4.14.
STATUS = """\
Name:\tcat
VmPeak:\t    5560 kB
VmRSS:\t    2040 kB
RssAnon:\t     168 kB
RssFile:\t    1872 kB
RssShmem:\t       0 kB
Threads:\t1
"""

# Mappings of /proc/self/smaps of a loaded model (the heap, two pieces of a cached graph's weights, an anonymous
# mapping; the last path made up to hold spaces). Lines end in a space where the kernel writes one (\x20).
SMAPS = """\
564f4aca8000-564f54d25000 rw-p 00000000 00:00 0                          [heap]
Size:             164340 kB
Rss:               82416 kB
Anonymous:         82416 kB
VmFlags: rd wr mr mw me ac\x20
7f99c6a39000-7f99c6e66000 rw-p 30439000 fe:00 2156944                    /tmp/ort/08d7/model.opt.onnx.data
Size:               4276 kB
Rss:                4276 kB
Private_Clean:      4276 kB
Anonymous:             0 kB
THPeligible:           0
VmFlags: rd wr mr mw me ac\x20
7f99c7460000-7f99c7889000 rw-p 2f860000 fe:00 2156944                    /tmp/ort/08d7/model.opt.onnx.data
Size:               4260 kB
Rss:                2048 kB
Anonymous:             0 kB
7f99c8000000-7f99c8021000 rw-p 00000000 00:00 0\x20
Rss:                 132 kB
Anonymous:           132 kB
55fda036f000-55fda0371000 r--p 00000000 fe:00 260131                     /opt/my models/a b.onnx
Rss:                   8 kB
"""


def test_smaps_rollup_splits_resident_memory_into_anonymous_and_file_backed():
    use = parse_smaps_rollup(ROLLUP)
    assert use is not None
    assert use.rss_mb == 896.0
    assert use.anon_mb == 152.0
    assert use.file_mb == 744.0


def test_status_is_read_where_smaps_rollup_is_missing():
    use = parse_smaps_rollup(STATUS)
    assert use is not None
    assert (use.rss_mb, use.anon_mb, use.file_mb) == (2040 / 1024, 168 / 1024, 1872 / 1024)


def test_text_without_memory_figures_gives_none():
    assert parse_smaps_rollup("") is None
    assert parse_smaps_rollup("Rss: lots\nAnonymous: some kB\n") is None


def test_smaps_sums_resident_pages_per_mapped_file():
    by_path = parse_smaps_by_path(SMAPS)
    assert by_path == {
        "/tmp/ort/08d7/model.opt.onnx.data": (4276 + 2048) / 1024,
        "/opt/my models/a b.onnx": 8 / 1024,
    }


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_any_text_parses_without_raising(text):
    use = parse_smaps_rollup(text)
    if use is not None:
        assert 0 <= use.anon_mb <= use.rss_mb and 0 <= use.file_mb <= use.rss_mb
    assert all(v >= 0 for v in parse_smaps_by_path(text).values())


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.sampled_from(ROLLUP.splitlines() + SMAPS.splitlines() + ["Rss: 9 kB", "x-y", "-"]), max_size=40
    )
)
def test_shuffled_real_lines_parse_without_raising(lines):
    text = "\n".join(lines)
    use = parse_smaps_rollup(text)
    if use is not None:
        assert 0 <= use.anon_mb <= use.rss_mb
    parse_smaps_by_path(text)


@pytest.mark.skipif(not Path("/proc/self/smaps_rollup").exists(), reason="Linux /proc only")
def test_memory_use_sees_an_array_being_touched_and_a_mapped_file(tmp_path):
    before = memory_use()
    assert before is not None
    # A fresh anonymous mapping, every page written: malloc could hand back pages an earlier test freed
    # (already resident, so nothing would grow), a new mapping cannot.
    block = mmap.mmap(-1, 64 * 1024 * 1024, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    np.frombuffer(block, np.uint8)[:] = 1
    grown = memory_use()
    assert grown is not None and grown.anon_mb - before.anon_mb > 48
    data = tmp_path / "weights.bin"
    data.write_bytes(b"\1" * (16 * 1024 * 1024))
    mapped = np.memmap(data, np.uint8, mode="r")
    assert int(mapped.sum()) == 16 * 1024 * 1024  # reads every page
    use = memory_use({"weights": [data]})
    assert use is not None and 12 < use.graphs_mb["weights"] <= 16.1
    del mapped
    block.close()


@pytest.mark.skipif(sys.platform != "linux", reason="Linux /proc only")
def test_graph_files_that_are_not_mapped_count_zero(tmp_path):
    use = memory_use({"decode": [tmp_path / "absent.onnx"]})
    assert use is not None and use.graphs_mb == {"decode": 0.0}
