"""PyTorch training with parameters and AdamW moments in Strata's tiers.

    import strata.torch as st
    model, opt = st.offload(model, lr=3e-4, host_mem="256M", nvme_dir="/mnt/nvme/run")
    for x, y in batches:
        loss = loss_fn(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    st.save(model, "model.safetensors")
    st.close(model)

After offload the model holds no copy of its parameters (each `p.data` is an empty
placeholder): a module holds its own while its forward or backward runs (_hooks.py), any other
torch call given a parameter is served by the parameter itself (Note [Parameter reads],
_reads.py), and the gradients go to Strata as soon as they are final (_params.py).
model.state_dict() reads the values out of Strata, load_state_dict() writes them in.
docs/embedding.md has the details and the limits (float32 CPU parameters; the reads the Note
cannot see).
"""
import contextlib
import functools

import torch

from . import _C, _hooks, _layout, _safetensors
from ._optim import StrataAdamW
from ._params import OffloadState, ParamEntry
from ._reads import OffloadedParameter

__all__ = ["offload", "save", "load", "close", "closing", "stats", "checkpoint", "runtime"]


def _collect(model, weight_decay):
    """(entries in model order, {module: [(attribute name, entry)] of its direct parameters},
    ids of the parameters left alone: empty ones). A parameter reachable from several modules
    (tied) is one entry, named and grouped where met first."""
    entries, by_id, owners, empty = [], {}, {}, set()
    for mname, module in model.named_modules():
        own = []
        for pname, p in module._parameters.items():
            if p is None:
                continue
            name = f"{mname}.{pname}" if mname else pname
            if isinstance(p, OffloadedParameter):
                raise ValueError(f"strata.torch: parameter '{name}' is offloaded already (as "
                                 f"'{p._strata_entry.name}' of another st.offload); a parameter "
                                 "can be offloaded with one model only")
            if isinstance(p, torch.nn.parameter.UninitializedParameter):
                raise ValueError(f"strata.torch: parameter '{name}' is uninitialized (a lazy "
                                 "module): run one forward before st.offload")
            if p.numel() == 0:
                empty.add(id(p))
                continue
            e = by_id.get(id(p))
            if e is None:
                if p.dtype != torch.float32:
                    raise TypeError(f"strata.torch: parameter '{name}' is {p.dtype}; Strata's "
                                    "optimizer updates float32 parameters only")
                if p.device.type != "cpu":
                    raise ValueError(f"strata.torch: parameter '{name}' is on {p.device}; "
                                     "only CPU tensors are supported")
                # As `strata train` does (GPT-2 practice): no decay for biases and norms.
                # One group, packed in model order (Note [Page size and grouping]).
                e = ParamEntry(name, _layout.GROUP, p,
                               weight_decay if p.dim() >= 2 else 0.0)
                by_id[id(p)] = e
                entries.append(e)
            e.slots.append((module, pname))
            own.append((pname, e))
        if own:
            owners[module] = own
    return entries, owners, empty


def _page_size(entries, host_mem, checkpoint_dir, resume):
    """The page size offload() uses when none is given: a resumed checkpoint's own, or the one
    that pads least (Note [Page size and grouping] in _layout.py)."""
    if resume is not None and checkpoint_dir is not None:
        saved = _layout.checkpoint_page_size(checkpoint_dir, resume)
        if saved is not None:
            return saved
    return _layout.choose_page_size(entries, host_mem)


def _register(rt, entries):
    for e in entries:
        e.tensor = rt.register(e.name, e.nbytes, "f32", "parameter", e.group)
        if e.param.requires_grad:
            e.grad = rt.register(e.name + ".grad", e.nbytes, "f32", "gradient", e.group)
            rt.register_pair(e.tensor, e.grad, e.weight_decay)


def offload(model, *, host_mem, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01,
            grad_clip=0.0, gpu_mem=None, nvme_dir=None, page_size=None, checkpoint_dir=None,
            resume=None, threads=None, options=None):
    """Moves `model`'s parameters into a new Strata runtime; returns (model, optimizer).

    The optimizer is AdamW (torch.optim.AdamW's semantics) run by Strata: weight_decay applies
    to parameters with 2+ dimensions, grad_clip > 0 clips the global gradient norm first.
    host_mem, gpu_mem, nvme_dir, page_size, checkpoint_dir, threads are Strata's options
    (sizes as "64M" or ints); page_size defaults to the multiple of 4K (>= 64K) that holds the
    largest parameter and pads least (_layout.py), or a resumed checkpoint's. resume reopens
    from a checkpoint in checkpoint_dir (the values come from it instead of the model).
    `options` passes further Strata options (a dict).
    """
    if getattr(model, "_strata", None) is not None:
        raise RuntimeError("strata.torch: this model is offloaded already")
    entries, owners, empty = _collect(model, weight_decay)
    if not entries:
        raise ValueError("strata.torch: the model has no parameters to offload")
    opts = dict(options or {})
    opts.update(host_mem=host_mem, gpu_mem=gpu_mem, nvme_dir=nvme_dir,
                page_size=page_size if page_size is not None else
                _page_size(entries, host_mem, checkpoint_dir, resume),
                checkpoint_dir=checkpoint_dir, resume=resume, threads=threads)
    rt = _C.Runtime(opts)
    try:
        _register(rt, entries)
        state = OffloadState(rt, model, entries, grad_clip)
        for e in entries:
            e.state = state
            if resume is None:
                state.overwrite(e, e.param.data)
            else:
                e.grad_zero = False  # a checkpoint keeps gradients as they were
    except BaseException:
        rt.close()
        raise
    # Nothing can fail from here on: the model is changed only now.
    state.unoffloaded = empty
    for mname, module in model.named_modules():  # the model itself by its class, in messages
        state.module_names[module] = mname or type(model).__name__
    for e in entries:
        if e.grad is not None:
            _hooks.hook_gradient(state, e)  # while p.data still has its real shape
        e.param.data = torch.empty(0, dtype=e.dtype)
        e.param.__class__ = OffloadedParameter  # Note [Parameter reads]
        e.param._strata_entry = e
    _hooks.install(state, owners)
    model._strata = state
    _override_methods(model, state)
    decay = [e.param for e in entries if e.grad is not None and e.weight_decay != 0.0]
    no_decay = [e.param for e in entries if e.grad is not None and e.weight_decay == 0.0]
    groups = [g for g in ({"params": decay, "weight_decay": weight_decay},
                          {"params": no_decay, "weight_decay": 0.0}) if g["params"]]
    opt = StrataAdamW(state, groups, lr, betas, eps, weight_decay, grad_clip)
    return model, opt


def _state(model):
    state = getattr(model, "_strata", None)
    if state is None:
        raise ValueError("strata.torch: this model was not offloaded (st.offload)")
    return state


# The model's methods that must know about Strata, replaced on the model object itself (and
# put back by close(restore=True)): the class's versions would see empty placeholders.
_OVERRIDDEN = ("state_dict", "zero_grad")


def _available_bytes():
    """The memory the system can still give this process (MemAvailable), or None if unknown."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _state_dict(model, *args, destination=None, prefix="", keep_vars=False):
    """model.state_dict() of an offloaded model: as torch's, with each parameter a copy of its
    values read from Strata (one copy per parameter, shared by its tied names, as torch shares
    one tensor). keep_vars=True gives the parameters themselves (torch calls on them read the
    values). Refuses when the copies would not fit in the memory left (MemAvailable)."""
    cls = type(model)
    if args or keep_vars:
        return cls.state_dict(model, *args, destination=destination, prefix=prefix,
                              keep_vars=keep_vars)
    state = _state(model)
    need = sum(e.nbytes for e in state.entries)
    have = _available_bytes()
    if have is not None and need > have:
        raise MemoryError(
            f"strata.torch: model.state_dict() would copy the {need / 2**20:.1f} MiB of "
            f"parameters out of Strata into memory, and only {have / 2**20:.1f} MiB is "
            "available; write them to a file with st.save(model, path) (safetensors, read "
            "straight from Strata's pages), or take parts (model.<submodule>.state_dict())")
    out = cls.state_dict(model, destination=destination, prefix=prefix, keep_vars=True)
    copies = {}
    for k, v in out.items():
        if isinstance(v, OffloadedParameter):
            e = v._strata_entry
            if id(e) not in copies:
                copies[id(e)] = state.copy_of(e)
            out[k] = copies[id(e)]
        elif isinstance(v, torch.Tensor):
            out[k] = v.detach()
    return out


def _zero_grad(state, set_to_none=True):
    """model.zero_grad() of an offloaded model: discards Strata's gradients, as opt.zero_grad()."""
    state.zero_grad()


def _override_methods(model, state):
    model.state_dict = functools.partial(_state_dict, model)
    model.zero_grad = functools.partial(_zero_grad, state)


def runtime(model):
    """The model's strata.Runtime (the C API's calls)."""
    return _state(model).runtime


def stats(model):
    """Strata's counters (strata_get_stats) as a dict."""
    return _state(model).runtime.stats()


def checkpoint(model, name):
    """Durably saves parameters, gradients, moments and the step count under `name` in the
    checkpoint_dir given to offload (strata_checkpoint); reopen with offload(resume=name)."""
    _state(model).runtime.checkpoint(name)


def close(model, restore=False):
    """Waits for a running step and closes the model's runtime. restore=True first copies the
    parameters back into ordinary tensors, so the model works without Strata again; otherwise
    the model is unusable afterwards (its forward raises strata.Error)."""
    state = _state(model)
    if state.closed:
        return
    state.close(restore)
    if restore:  # a plain torch model again
        for e in state.entries:
            e.param.__class__ = torch.nn.Parameter
            del e.param._strata_entry
        for name in _OVERRIDDEN:
            model.__dict__.pop(name, None)


@contextlib.contextmanager
def closing(model, restore=False):
    """`with st.closing(model): ...` closes the runtime at the end, as close()."""
    try:
        yield model
    finally:
        close(model, restore)


def _bytes(t):
    """A contiguous tensor's memory as a flat uint8 numpy array (any dtype, bfloat16 too)."""
    return t.reshape(-1).view(torch.uint8).numpy()


def _named_entries(model, state):
    """(name, entry) for every name a parameter has (tied ones under each)."""
    for mname, module in model.named_modules():
        for pname, p in module._parameters.items():
            e = state.by_param.get(id(p)) if p is not None else None
            if e is not None:
                yield (f"{mname}.{pname}" if mname else pname), e


def save(model, path):
    """Writes the parameters (each once, under its first name) and the persistent buffers to a
    safetensors file, reading the parameters straight from Strata's pages."""
    state = _state(model)
    tensors, seen = [], set()
    for name, e in _named_entries(model, state):
        if id(e) in seen:
            continue
        seen.add(id(e))

        def write(f, e=e):
            values = state.read(e)
            try:
                f.write(_bytes(values))
            finally:
                state.done(e)

        tensors.append((name, e.dtype, e.shape, write))
    keys = set(model.state_dict(keep_vars=True).keys())
    for name, b in model.named_buffers():
        if name in keys and b is not None:
            b = b.detach().contiguous()
            tensors.append((name, b.dtype, tuple(b.shape),
                            lambda f, b=b: f.write(_bytes(b))))
    _safetensors.write(path, tensors)


def load(model, path, strict=True):
    """Reads a safetensors file (as save writes it) into the offloaded parameters, straight
    into Strata's pages, and into the buffers. strict: every parameter and persistent buffer
    must be in the file and every tensor of the file must be one of them."""
    state = _state(model)
    by_name = dict(_named_entries(model, state))
    buffers = dict(model.named_buffers())
    with open(path, "rb") as f:
        header = _safetensors.read_header(f)
        loaded = set()
        for name, (dtype, shape, begin, nbytes) in header.items():
            target = by_name.get(name)
            if target is None and name not in buffers:
                if strict:
                    raise KeyError(f"strata.torch.load: '{name}' in {path} is no parameter or "
                                   "buffer of the model")
                continue
            want = target.shape if target is not None else tuple(buffers[name].shape)
            if tuple(shape) != want:
                raise ValueError(f"strata.torch.load: '{name}' has shape {list(shape)} in "
                                 f"{path}, the model's is {list(want)}")
            values = torch.empty(shape, dtype=dtype)
            _safetensors.read_into(f, begin, _bytes(values))
            with torch.no_grad():
                if target is not None:
                    state.overwrite(target, values)
                    loaded.add(id(target))
                else:
                    buffers[name].copy_(values)
            loaded.add(name)
    if strict:
        missing = [n for n, e in by_name.items() if id(e) not in loaded]
        keys = set(model.state_dict(keep_vars=True).keys())
        missing += [n for n in buffers if n in keys and n not in loaded]
        if missing:
            raise KeyError(f"strata.torch.load: {path} lacks {missing}")
