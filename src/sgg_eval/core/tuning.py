"""Tuning constants: sizes that trade speed against memory. None of them changes a number the tools write
(the tests run them at extreme values and compare); each says what it sizes and why it is this size. The
measurements behind them are in docs/performance.md. Modules read them as ``tuning.NAME`` at call time, so a
test can set one for a run.
"""

from __future__ import annotations

# --- ranking (metrics/ranking/blocks.py, metrics/ranking/block_ranks.py, metrics/ranking/ng_top.py)
# Images per block of the box evaluation: a block is ranked as one set of arrays and is the unit of --jobs.
BLOCK_IMAGES = 256
# SGDet images hold ~50x the pairs of PredCls ones: blocks this many times smaller keep every worker busy
# until the end of a file (the block size depends on the task only, so the output does not depend on jobs).
SGDET_BLOCK_DIVISOR = 8
# Images are ranked together in runs of at most this many predicted pairs: all of a PredCls block (132 pairs
# per image); ~100 MB at most.
MAX_RANKED_PAIRS = 50_000
# Images with more pairs than this (SGDet: every ordered pair of ~80 detections) are ranked in runs of their
# own, with their scores kept image by image: a block-wide copy of the scores would cost more than the
# per-call overhead that batching saves on them.
LARGE_IMAGE_PAIRS = 2_000
# Blocks are read and ranked in tasks of about this many images (SGDet: 4 blocks; other tasks: one), which
# share the reading, the detector boxes' matching and a worker's round trip. The last 2 * jobs blocks go one
# by one, so that the workers finish together.
TASK_IMAGES = 128
# The no-graph-constraint top list: candidates per top-n entry above which the bound taken from each pair's
# best score is refined before sorting.
NG_LOOSE = 4

# --- reading and checking (data/store.py, data/batch_checks.py, formats/)
# Images of a split or prediction store read (and validated) at a time.
STORE_READ_BATCH = 256
# Images of an eval_results.pytorch whose tensor views are made in one call.
EVAL_RESULTS_READ_BATCH = 64
# Relation scores of a batch checked as one array up to this many values (a 16 MB copy at most).
CONCATENATED = 1 << 22
# Score matrices of at least this many rows keep their row maxima when asked: evaluation ranks images of
# over LARGE_IMAGE_PAIRS pairs with their scores apart, from these maxima.
MAXIMA_ROWS = 1024
# Bytes of a score matrix reduced and then CRC-32'd at a time (``rowwise.row_reduce_and_whole_in_blocks``):
# small enough that its rows are still in L2 when the CRC-32 reads them (62 GB/s after 256 kB; 28 GB/s after
# a whole 1.3 MB SGDet matrix); smaller blocks add more per-call overhead than they save.
BLOCK_BYTES = 256 << 10
# The careful torch unpickler forgets the containers its memo holds every this many tensors, so memory stays
# flat on files of millions of tensors.
COMPACT_EVERY = 4096

# --- panoptic SGG and the pipeline (psg_work.py, pipeline/fingerprint.py)
# Images a --jobs worker evaluates per task in panoptic mode.
PSG_CHUNK = 16
# Bytes read at a time when a model file is fingerprinted (SHA-256).
FINGERPRINT_CHUNK = 8 << 20
