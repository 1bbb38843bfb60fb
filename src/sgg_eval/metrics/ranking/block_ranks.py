"""First-match ranks of a whole block of images in one set of array operations (issue 11).

The same ranks as :func:`ranks.image_ranks`, image by image, bit for bit (tested), but computed over the
concatenation of many images: every image's objects, GT rows and predicted pairs get global indices
(offsets), object matching is one elementwise IoU over every (GT object, predicted object) pair of the same
image, and each family's "first matching candidate" is a segment minimum over (GT row, matching pair)
combinations. The Python cost per image is then a few slices instead of ~100 numpy calls on tiny arrays.

The NG top-``ng_limit`` of every image is selected at once too (``ng_top.ng_ranks``). Large images (SGDet)
keep their scores apart (``candidates.ImageScores``): the work that reads every score of an image (NG top,
ng-IMR, IMR counts) runs image by image on its own matrix, and everything else for the whole run.
"""

from __future__ import annotations

import numpy as np

from sgg_eval.arrays.segments import expand_segments, position_in_runs, segment_offsets
from sgg_eval.core.defaults import IOU_THRESHOLD
from sgg_eval.metrics.iou import sgb_iou
from sgg_eval.metrics.rank_records import BlockRanks
from sgg_eval.metrics.ranking.candidates import CandidateBlock, ImageScores
from sgg_eval.metrics.ranking.families import NO_MATCH, Candidates, first_match, key_image, pair_key
from sgg_eval.metrics.ranking.ng_top import ng_ranks


def block_ranks(
    gts: list,
    cands: CandidateBlock | list[Candidates],
    *,
    ng_limit: int = 100,
    gt_pair_family: bool = True,
    triplet_family: bool = True,
    iou_threshold: float = IOU_THRESHOLD,
    iou=sgb_iou,
) -> BlockRanks:
    """:func:`ranks.image_ranks` of every (GT image, candidates) of a block, concatenated (``BlockRanks``);
    every GT image has rows.
    ``cands``: the images' candidates, concatenated (``candidates.prepare_block``) or as a list. ``iou``: the
    protocol's box IoU (``metrics.iou.BOX_IOUS``), elementwise over (GT box, predicted box).

    Axes: ``r`` GT rows of the block, ``j`` predicted pairs, ``(cr, cp)`` the (row, pair) combinations whose
    predicted objects match the row's GT objects (label + IoU), in row order.
    """
    block = cands if isinstance(cands, CandidateBlock) else CandidateBlock.of(cands)
    b = len(gts)
    n_gt = np.array([len(g.labels) for g in gts], dtype=np.int64)
    n_rows = np.array([len(g.rels) for g in gts], dtype=np.int64)
    n_obj, n_pairs = block.n_obj, block.n_pairs
    gt_off, obj_off, pair_off = segment_offsets(n_gt), segment_offsets(n_obj), segment_offsets(n_pairs)
    row_img = np.repeat(np.arange(b), n_rows)
    rels = np.concatenate([g.rels for g in gts]).astype(np.int64)
    gs_loc, go_loc, gp = rels[:, 0], rels[:, 1], rels[:, 2]
    gs, go = gs_loc + gt_off[row_img], go_loc + gt_off[row_img]
    num_rows = len(gp)
    pair_img, pair_local = block.pair_images()  # each pair's image and index there
    local_pairs = block.pairs
    pair_at = np.repeat(pair_off, n_pairs)  # per pair: its image's first pair
    # every pair as one (image, subject, object) key, sorted once: the matching combinations, the GT-pair
    # family and R_tr look pairs up in it
    pred_key = pair_key(local_pairs[:, 0], local_pairs[:, 1], pair_img)
    pair_order = np.argsort(pred_key, kind="stable")
    sorted_pair_key = pred_key[pair_order]

    # GC list: each pair's position in its image's list; its predicate is block.predicted's
    gc_pair = block.gc_pairs + pair_at  # GC lists are image after image too
    gc_pos = np.empty(len(gc_pair), dtype=np.int64)
    gc_pos[gc_pair] = pair_local  # the GC list's positions, image by image
    predicted = block.predicted

    # object matching over every (GT object, predicted object) of the same image
    ok_img, ok_local = expand_segments(n_gt * n_obj)
    g_all = gt_off[ok_img] + ok_local // np.maximum(n_obj[ok_img], 1)
    q_all = obj_off[ok_img] + ok_local % np.maximum(n_obj[ok_img], 1)
    gt_labels = np.concatenate([g.labels for g in gts])
    labels = block.labels
    ok = gt_labels[g_all] == labels[q_all]
    same = np.flatnonzero(ok)
    gt_boxes = np.concatenate([np.asarray(g.boxes, np.float32).reshape(-1, 4) for g in gts])
    boxes = block.boxes
    ok[same] = iou(gt_boxes[g_all[same]], boxes[q_all[same]]) >= np.float32(iou_threshold)  # NaN: no match
    ok_off = segment_offsets(n_gt * n_obj)

    def matches(g: np.ndarray, q: np.ndarray, img: np.ndarray) -> np.ndarray:
        return ok[ok_off[img] + (g - gt_off[img]) * n_obj[img] + (q - obj_off[img])]

    # (row, pair) combinations of the same image whose predicted objects match the row's GT objects: each
    # row's (subject match, object match) combinations, looked up among the pairs (every copy of a pair)
    m_g, m_q = g_all[ok], q_all[ok]  # by GT object (the matrix is generated GT object by GT object)
    m_count = np.bincount(m_g, minlength=len(gt_labels))
    m_start = segment_offsets(m_count)
    matched_gt = np.bincount(np.repeat(np.arange(b), n_gt)[m_count > 0], minlength=b)
    n_s, n_o = m_count[gs], m_count[go]
    combo_row, within = expand_segments(n_s * n_o)
    n_o_c, img_c = n_o[combo_row], row_img[combo_row]
    want = pair_key(
        m_q[m_start[gs[combo_row]] + within // n_o_c] - obj_off[img_c],
        m_q[m_start[go[combo_row]] + within % n_o_c] - obj_off[img_c],
        img_c,
    )
    lo, hi = np.searchsorted(sorted_pair_key, want, "left"), np.searchsorted(sorted_pair_key, want, "right")
    found, copy = expand_segments(hi - lo)
    cr, cp = combo_row[found], pair_order[lo[found] + copy]
    pred_ok = predicted.at(cp) == gp[cr]

    gc = first_match(num_rows, cr[pred_ok], gc_pos[cp[pred_ok]])
    # IMR: a pair's position among its image's GC candidates with the same predicate
    imr = first_match(
        num_rows, cr[pred_ok], _within_predicate(cp[pred_ok], gc_pair, gc_pos, predicted, pair_img, block.probs)
    )
    first_any = first_match(num_rows, cr, gc_pos[cp])  # first GC pair matching the objects (PR@K, PRk)

    # distinct GT index pairs per image, in key order (as image_ranks lists them)
    row_key = pair_key(gs_loc, go_loc, row_img)
    uniq_key, first_row = np.unique(row_key, return_index=True)
    pair_rank = first_any[first_row]
    n_uniq = np.bincount(key_image(uniq_key), minlength=b)

    gt_pair = None
    if gt_pair_family:
        on_gt = np.isin(pred_key, uniq_key)
        on_gt_in_gc = on_gt[gc_pair].astype(np.int64)
        counted = np.cumsum(on_gt_in_gc)
        before_image = np.concatenate([[0], counted])[pair_off]  # GT-pair candidates of earlier images
        position = np.empty(len(gc_pair), dtype=np.int64)
        position[gc_pair] = counted - 1 - before_image[pair_img[gc_pair]]
        keep = pred_ok & on_gt[cp]
        gt_pair = first_match(num_rows, cr[keep], position[cp[keep]])

    ng = per_predicate = predicate_rank = top_predicate = triplet = None
    if block.probs is not None:
        probs, per_pair = block.probs, block.pair_products()
        ng = ng_ranks(block, ng_limit, per_pair, pair_img, pair_off, cr, cp, gp, num_rows)
        per_predicate = _per_predicate(per_pair, probs, gp, row_img, n_rows, n_pairs, pair_off, cr, cp, num_rows)
        predicate_rank, top_predicate = _predicate_rank(probs, gp, first_any, row_img, pair_off, gc_pair)
        if triplet_family:
            obj_at = np.repeat(obj_off, n_pairs)  # per pair: its image's first object
            triplet = _triplet(
                per_pair,
                probs,
                gp,
                gs,
                go,
                gs_loc,
                go_loc,
                row_img,
                pair_order,
                sorted_pair_key,
                local_pairs[:, 0] + obj_at,
                local_pairs[:, 1] + obj_at,
                matches,
            )

    return BlockRanks(
        n_rows=n_rows,
        n_pairs=n_uniq,
        num_gt_objects=n_gt,
        matched_gt_objects=matched_gt,
        predicates=gp,
        gc=gc,
        pair=pair_rank,
        imr=imr,
        ng=ng,
        gt_pair=gt_pair,
        per_predicate=per_predicate,
        triplet=triplet,
        predicate_rank=predicate_rank,
        top_predicate=top_predicate,
    )


def _within_predicate(queries, gc_pair, gc_pos, predicted, pair_img, probs=None) -> np.ndarray:
    """For pairs ``queries`` (in image order): how many GC candidates of their image come before them with the
    same predicted predicate (``predicted``: :class:`PairPredicates`). Images whose scores are kept apart
    (``probs``: :class:`ImageScores`; SGDet, few queries each): running counts along each image's GC list per
    queried predicate; otherwise one stable sort of every pair's (image, predicate) group, taken along the GC
    lists so that each group stays in GC order."""
    if isinstance(probs, ImageScores):
        out = np.empty(len(queries), dtype=np.int64)
        bounds = np.searchsorted(pair_img[queries], np.arange(len(probs.probs) + 1))
        for i in np.flatnonzero(np.diff(bounds)).tolist():
            lo, at = int(probs.pair_off[i]), slice(bounds[i], bounds[i + 1])
            gc_list = gc_pair[lo : lo + len(probs.probs[i])] - lo  # the image's GC list, by its own pair indices
            out[at] = _within_image(queries[at] - lo, gc_list, gc_pos[queries[at]], probs.predicates(i))
        return out
    gc_pred = predicted.all()
    group = (pair_img * (int(gc_pred.max(initial=0)) + 1) + gc_pred)[gc_pair]  # along the GC lists
    # a stable sort of the groups keeps each group in GC order; groups of a block fit 16 bits, which numpy
    # sorts by radix (~7x a 64-bit stable sort)
    order = np.argsort(group.astype(np.uint16) if group.max(initial=0) < 1 << 16 else group, kind="stable")
    within = np.empty(len(order), dtype=np.int64)
    within[gc_pair[order]] = position_in_runs(group[order])
    return within[queries]


def _within_image(queries, gc_list, query_pos, predicted) -> np.ndarray:
    """One image: per queried pair (at GC positions ``query_pos``), the earlier candidates of ``gc_list`` with
    its predicate, counted along the list for each queried predicate."""
    query_pred = predicted.at(queries)
    out = np.empty(len(queries), dtype=np.int64)
    for c in np.unique(query_pred).tolist():
        running = np.cumsum(predicted.equal_to(c)[gc_list])
        mine = query_pred == c
        out[mine] = running[query_pos[mine]] - 1
    return out


def _per_predicate(per_pair, probs, gp, row_img, n_rows, n_pairs, pair_off, cr, cp, num_rows) -> np.ndarray:
    """ng-IMR: each row's rank when all pairs of its image are ranked by ``s_s·s_o·p_c`` for its predicate c
    (ties: lower pair first), at its best matching pair. Images whose scores are kept apart (:class:`ImageScores`)
    take a ``[rows, pairs]`` score matrix each; otherwise every (row, pair of its image) combination at once,
    so no row is compared with another image's pairs."""
    best = np.full(num_rows, -np.inf, dtype=np.float32)  # float32 scores: comparisons never widen the matrices
    own = per_pair[cp] * probs[cp, gp[cr]]
    np.maximum.at(best, cr, own)
    first = first_match(num_rows, cr[own == best[cr]], cp[own == best[cr]])
    has = np.isfinite(best)
    if isinstance(probs, ImageScores):
        counted = np.zeros(num_rows, dtype=np.int64)
        for i, (r0, m, lo) in enumerate(zip(segment_offsets(n_rows).tolist(), n_rows.tolist(), pair_off.tolist())):
            if len(probs.probs[i]):
                rows = slice(r0, r0 + m)
                counted[rows] = _count_above(
                    probs.probs[i], per_pair[lo : lo + len(probs.probs[i])], gp[rows], best[rows], first[rows] - lo
                )
        return np.where(has, counted, NO_MATCH)
    rows = np.flatnonzero(has)
    out = np.full(num_rows, NO_MATCH, dtype=np.int64)
    if len(rows) == 0:
        return out
    img = row_img[rows]
    size = n_pairs[img]
    width = int(size.max())
    if len(rows) * width <= 2 * int(size.sum()):
        # images of similar sizes: a [rows, most pairs] matrix (past its image's pairs a row is masked), whose
        # comparisons broadcast the row's best and first pair instead of gathering them per combination
        k = np.arange(width)
        j = np.minimum(pair_off[img][:, None] + k, len(per_pair) - 1)
        score = per_pair[j] * probs.reshape(-1)[j * probs.shape[1] + gp[rows][:, None]]
        b = best[rows][:, None]
        counted = (score > b) | ((score == b) & (j < first[rows][:, None]))
        counted &= k < size[:, None]
        out[rows] = np.count_nonzero(counted, axis=1)
        return out
    row_of, within = expand_segments(size)  # every pair of the row's image
    j = pair_off[img][row_of] + within
    r = rows[row_of]
    score = per_pair[j] * probs[j, gp[r]]
    counted = (score > best[r]) | ((score == best[r]) & (j < first[r]))
    out[rows] = np.bincount(row_of, weights=counted, minlength=len(rows)).astype(np.int64)
    return out


def _count_above(probs, per_pair, gp, best, first) -> np.ndarray:
    """One image's rows (predicates ``gp``, best scores ``best`` at pairs ``first``): the pairs scoring above
    the row's best, or tying it at a lower pair index. The rows' score columns are gathered pair by pair
    (np.take reads each pair's scores once) and made contiguous, so each row compares along one long array."""
    col = np.ascontiguousarray(np.take(probs, gp, axis=1).T)
    col *= per_pair
    tied = np.flatnonzero(col == best[:, None])  # few: a row's own best pair, and exact ties
    tied_row, tied_pair = tied // len(per_pair), tied % len(per_pair)
    return np.count_nonzero(col > best[:, None], axis=1) + np.bincount(
        tied_row[tied_pair < first[tied_row]], minlength=len(best)
    )


def _predicate_rank(probs, gp, first_any, row_img, pair_off, gc_pair) -> tuple[np.ndarray, np.ndarray]:
    """PRk: rank of the GT predicate among the scores of the first matching pair in GC order (NaN if none); and
    the predicate that pair ranks first (-1 if none; ties to the lower id, as the rank counts them)."""
    out, top = np.full(len(gp), np.nan), np.full(len(gp), -1, dtype=np.int64)
    rows = np.flatnonzero(first_any != NO_MATCH)
    pair = gc_pair[pair_off[row_img[rows]] + first_any[rows]]
    fg = probs[pair, 1:]
    own = fg[np.arange(len(rows)), gp[rows] - 1]
    ids = np.arange(fg.shape[1])[None, :]
    out[rows] = (fg > own[:, None]).sum(axis=1) + ((fg == own[:, None]) & (ids < (gp[rows] - 1)[:, None])).sum(axis=1)
    if len(rows):
        top[rows] = np.argmax(fg, axis=1) + 1
    return out, top


def _triplet(per_pair, probs, gp, gs, go, gs_loc, go_loc, row_img, order, sorted_key, ps, po, matches):
    """R_tr: candidates are the row's own index pair in both directions with every predicate, by
    ``s_i·s_j·p_c``; ties by pair order, then predicate id. ``order`` sorts the pairs' (image, subject,
    object) keys stably; ``sorted_key`` is them in that order."""
    num_rows = len(gp)
    ranks = np.full(num_rows, NO_MATCH, dtype=np.int64)
    entries = []
    for s, o in ((gs_loc, go_loc), (go_loc, gs_loc)):
        want = pair_key(s, o, row_img)
        lo, hi = np.searchsorted(sorted_key, want, "left"), np.searchsorted(sorted_key, want, "right")
        row_of, within = expand_segments(hi - lo)
        entries.append(row_of * (len(order) + 1) + order[lo[row_of] + within])
    combined = np.unique(np.concatenate(entries))  # by row, then pair index; each pair once per row
    rows, js = combined // (len(order) + 1), combined % (len(order) + 1)
    if len(rows) == 0:
        return ranks
    entry_scores = per_pair[js][:, None] * probs[js, 1:]
    own = entry_scores[np.arange(len(rows)), gp[rows] - 1]
    matching = matches(gs[rows], ps[js], row_img[rows]) & matches(go[rows], po[js], row_img[rows])
    best = np.full(num_rows, -np.inf)
    np.maximum.at(best, rows[matching], own[matching])
    is_best = matching & (own == best[rows])
    first_entry = np.full(num_rows, len(rows), dtype=np.int64)
    np.minimum.at(first_entry, rows[is_best], np.flatnonzero(is_best))
    b = best[rows][:, None]
    higher = (entry_scores > b).sum(axis=1)
    ties = entry_scores == b
    index = np.arange(len(rows))
    pred_ids = np.arange(entry_scores.shape[1])[None, :]
    tied_before = np.where(index < first_entry[rows], ties.sum(axis=1), 0) + np.where(
        index == first_entry[rows], (ties & (pred_ids < (gp[rows] - 1)[:, None])).sum(axis=1), 0
    )
    total = np.bincount(rows, weights=higher + tied_before, minlength=num_rows)
    has = np.isfinite(best)
    ranks[has] = total[has].astype(np.int64)
    return ranks
