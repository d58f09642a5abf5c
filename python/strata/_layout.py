"""How strata.torch lays a model's parameters into Strata's pages: one group, and a page size
chosen against padding.

Note [Page size and grouping]
Rationale
  Every page moves whole between the host pool and NVMe, padding included. A page holds
  tensors of one group and one role; a tensor that fits in a page never straddles two, and the
  host tier hands torch a pointer into one page, so every parameter must fit in a page
  (strata.h: "a host pointer covers one page"). Until 2026-11-27 the page was the smallest
  power of two holding the largest parameter, and the group was the model's block: a 2.25 MiB
  MLP weight forced 4 MiB pages, a block's 6.77 MiB took three of them and each embedding and
  the final norm a page of its own. The GPT of bench/torch_offload_bench.py laid its 41.2 MiB
  of parameters into 84 MiB of pages per role, and moved 2.6x per step what a step must move.
Approach
  - One group for the whole model ("(model)"): tensors are packed in registration order (model
    order, roughly the order forward uses them) across block boundaries, so no block's last
    page is padded on its own.
  - The page size is a multiple of 4 KiB (not a power of two), chosen by counting, for every
    candidate size, the pages Strata's packing (Note [Page packing] in memory/page_plan.h) would
    lay the parameters, gradients and both moments into; the size with the fewest bytes of pages
    wins, the smaller on a tie (more pages in host_mem: finer eviction and prefetch).
  - The candidates run from the largest parameter (at least 64 KiB) up to twice that, in at
    most 512 steps of 4 KiB or more, and never so large that host_mem holds fewer than 8
    pages when the smallest candidate leaves it 8. Larger pages pad less only by putting more
    tensors in one page, and a page is also the optimizer's unit: the forward of the next step
    waits for the update of each page it reads, so a page of half the model would serialise
    them.
  The bench's GPT now takes 42.9 MiB of 2.26 MiB pages per role (1.04x its bytes) and moves
  1.2x (docs/embedding.md, Page size and grouping, has the runs).
Limitations
  - Resuming needs the layout that saved the checkpoint: with `resume` and no page_size the
    checkpoint's own page size is used (read from its record); a checkpoint saved before this
    change (block groups) does not resume under it.
  - Tensors still do not straddle pages on the host tier, so the padding a model's largest
    tensors leave is not recovered (e.g. two 0.6-page tensors take two pages).
"""
import json
import os

_MIN_PAGE = 64 << 10  # no smaller page: per-page bookkeeping and I/O calls
_GRANULE = 4 << 10  # Strata's page sizes are multiples of 4 KiB (the NVMe tier's I/O unit)
_ALIGN = 256  # where a tensor may start in its page (embed/layout.cc, kTensorAlignBytes)
_CANDIDATES = 512  # the most page sizes counted
_HOST_PAGES = 8  # pages host_mem should hold at the least, where the smallest page allows
GROUP = "(model)"  # the one group every parameter goes into


def _round_up(n, to):
    return (n + to - 1) // to * to


def pages_of(sizes, page):
    """The pages Strata lays `sizes` (bytes, in registration order, one group and role) into:
    Note [Page packing], as embed/layout.cc counts it (Layout::fill_after)."""
    pages, offset = 0, 0
    for size in sizes:
        if pages == 0:
            pages, offset = 1, 0
        else:
            offset = _round_up(offset, _ALIGN)
            if offset >= page or (size <= page and offset + size > page):
                pages, offset = pages + 1, 0
        whole, rest = divmod(size, page)
        rest += offset
        if rest == 0:
            pages, offset = pages + whole - 1, page
        else:
            last = (rest + page - 1) // page  # 1 or 2
            pages, offset = pages + whole + last - 1, rest - (last - 1) * page
    return pages


def page_bytes_of(entries, page):
    """Bytes of the pages the parameters, and the gradients and two moments of the trainable
    ones, take at `page` bytes a page (what a step moves when none of it stays in host_mem)."""
    params = [e.nbytes for e in entries]
    trained = [e.nbytes for e in entries if e.param.requires_grad]
    param_pages = pages_of(params, page)
    trained_pages = param_pages if len(trained) == len(params) else pages_of(trained, page)
    return page * (param_pages + 3 * trained_pages)


def parse_size(size):
    """Bytes of a Strata size ("64M", "1.5G", 4096), or None where it is no size: Strata's own
    error (ParseBytes in core/util/sizes.cc) then speaks at runtime creation."""
    if isinstance(size, int):
        return size
    text = str(size).strip().lower()
    units = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10, "m": 1 << 20,
             "mb": 1 << 20, "mib": 1 << 20, "g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30,
             "t": 1 << 40, "tb": 1 << 40, "tib": 1 << 40}
    number = text.rstrip("kmgtib")
    unit = text[len(number):]
    try:
        return int(round(float(number) * units[unit])) if number else None
    except (KeyError, ValueError):
        return None


def choose_page_size(entries, host_mem):
    """The page size for `entries` (Note [Page size and grouping])."""
    largest = max((e.nbytes for e in entries), default=0)
    low = max(_MIN_PAGE, _round_up(largest, _GRANULE))
    high = 2 * low
    host = parse_size(host_mem)
    if host is not None:
        high = min(high, max(low, host // _HOST_PAGES // _GRANULE * _GRANULE))
    step = max(_GRANULE, _round_up((high - low) // _CANDIDATES, _GRANULE))
    best = None
    for page in range(low, high + 1, step):
        cost = page_bytes_of(entries, page)
        if best is None or cost < best[0]:
            best = (cost, page)
    return best[1]


def checkpoint_page_size(checkpoint_dir, name):
    """The page size checkpoint `name` was saved with, from its record in `checkpoint_dir`
    (embed/checkpoint_book.h: its fingerprint's page_size in format 2, page_bytes in format 1),
    or None when the record does not list it (Strata then says so)."""
    try:
        with open(os.path.join(checkpoint_dir, "strata_checkpoints.json")) as f:
            record = json.load(f)
        for c in record.get("checkpoints", []):
            if c.get("name") == name:
                if "fingerprint" in c:
                    return int(c["fingerprint"]["page_size"])
                return int(c["page_bytes"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        pass
    return None
