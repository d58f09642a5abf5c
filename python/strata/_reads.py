"""Parameters served wherever torch reads them: the OffloadedParameter class.

Note [Parameter reads]
  Module hooks (_hooks.py) give a module its own parameters while its forward runs. But a model
  may read a parameter anywhere else: a parent's forward reading a child's weight
  (nn.MultiheadAttention passes self.out_proj.weight to F.multi_head_attention_forward without
  calling out_proj), a head tied through F.linear(h, self.emb.weight), a regularizer in the
  training loop, state_dict(), load_state_dict(). Every such read is a torch call that takes the
  Parameter object as an argument, and torch lets a Tensor subclass intercept those calls
  (__torch_function__). So offload swaps the class of each parameter (the same object, as torch's
  lazy modules swap UninitializedParameter's) to OffloadedParameter, whose __torch_function__
  sees every torch call given an offloaded parameter, wherever it is made:

  - held (its module's forward or backward has it): the call runs as is;
  - not held: the call is a read from outside. The parameter is held for the call only (an
    acquire the learned access order records like any other, so the next iteration prefetches
    it), the call runs under the saved-tensor hooks, and any output that aliases the page (a
    view: w.t(), w[0], w.detach()) is cloned before the page goes back;
  - written in place (copy_, zero_, normal_, __setitem__, an F function with inplace=True): the
    parameter is acquired for writing (OVERWRITE for a whole copy_ or zero_, so a
    load_state_dict loads nothing first), the call runs on the page, and it is released. A
    write while the parameter is held for reading is an error;
  - a question about its shape (size(), shape, numel(), stride(), ...) is answered from the
    parameter's real shape without reading it; dtype, device, grad, requires_grad and the like
    from the placeholder;
  - p.data outside a read, data_ptr(), storage(), numpy(): refused (they would hand out memory
    that is not the parameter's, or the page past its release), as is replacing p.data;
  - p.grad while its gradient waits in Strata (after backward, before the step): refused, since
    the gradient is not there (torch.nn.utils.clip_grad_norm_ would see none); None otherwise.

  In backward, autograd needs values it saved in forward. The saved-tensor hooks (installed while
  an owner's forward runs, and around every call above) replace a saved tensor that lies in a held
  page by (parameter, size, stride, offset); unpacking it in backward holds the parameter if
  nobody does, until its gradient is final or the backward pass ends. A hook on the parameter
  itself holds it before autograd accumulates its gradient (AccumulateGrad checks the gradient
  against the parameter's shape).

  What it cannot see: reads that are no torch call with the parameter as an argument. Code run
  with torch functions disabled (torch._C.DisableTorchFunction, or inside another call made
  from here: F.multi_head_attention_forward's own ops see the weights it was given, held), C++
  that holds the tensor (torch.jit.script and torch.jit.trace'd modules compute with the empty
  placeholder: a size error, or silence where it broadcasts; tracing raises here), a tensor
  saved by ctx.w = w instead of ctx.save_for_backward (backward sees the placeholder), p.data
  taken while held and kept past the read, and outer saved-tensor hooks
  (torch.autograd.graph.save_on_cpu), which ours replace inside a read.
"""
import torch
from torch._C import DisableTorchFunction

from ._params import HELD_PAGES, with_context

Tensor = torch.Tensor


def _of(kind, names):
    """Tensor's getters ("get"), setters ("set") or methods ("method") of those names that this
    torch has, as the `func` __torch_function__ receives for them."""
    out = set()
    for n in names:
        attr = getattr(Tensor, n, None)
        if attr is not None:
            out.add(attr.__get__ if kind == "get" else attr.__set__ if kind == "set" else attr)
    return out


# Need no values: the placeholder has the parameter's dtype, device and autograd state.
_PASS = (
    _of("get", ["dtype", "device", "layout", "requires_grad", "grad_fn",
                "is_leaf", "_version", "names", "name", "is_cuda", "is_sparse", "is_sparse_csr",
                "is_quantized", "is_meta", "is_mkldnn", "is_nested", "_backward_hooks", "_base",
                "output_nr", "retains_grad", "is_xpu", "is_mps", "is_ort", "is_vulkan",
                "is_ipu", "_cdata"])
    | _of("set", ["requires_grad", "_backward_hooks", "names", "name"])
    | _of("method", ["requires_grad_", "register_hook", "retain_grad", "is_floating_point",
                     "is_complex", "is_signed", "element_size", "get_device", "_is_view",
                     "is_inference", "__hash__", "__dir__", "_fix_weakref", "is_shared",
                     "is_pinned", "_is_zerotensor", "is_conj", "is_neg", "type"]))
# Questions about the shape: answered from the real shape while the parameter is not held.
_SHAPE = (_of("get", ["shape", "ndim"])
          | _of("method", ["size", "dim", "ndimension", "numel", "nelement", "stride",
                           "is_contiguous", "storage_offset", "__len__"]))
# Would hand out the page's memory (or the placeholder's) past the call.
_REFUSED = _of("method", ["data_ptr", "storage", "_storage", "untyped_storage",
                          "_typed_storage", "numpy", "__array__", "__dlpack__", "set_",
                          "resize_", "resize_as_", "share_memory_", "__setstate__"])
_DATA_GET = Tensor.data.__get__
_DATA_SET = Tensor.data.__set__
# p.grad: the gradient goes to Strata as soon as it is final (take_grad), never stays in p.grad.
_GRAD = _of("get", ["grad", "_grad"]) | _of("set", ["grad", "_grad"])
_GRAD_SETTERS = _of("set", ["grad", "_grad"])
_INPLACE_DUNDERS = {"__setitem__", "__iadd__", "__isub__", "__imul__", "__itruediv__",
                    "__ifloordiv__", "__imod__", "__ipow__", "__iand__", "__ior__", "__ixor__",
                    "__ilshift__", "__irshift__", "__imatmul__"}
_OVERWRITERS = {"copy_", "zero_"}


def _name(func):
    return getattr(func, "__name__", None) or repr(func)


def _found(obj, out):
    """Appends every OffloadedParameter in `obj` (a call's args: tensors, lists, tuples,
    dicts of them) to out."""
    if isinstance(obj, OffloadedParameter):
        out.append(obj)
    elif isinstance(obj, (list, tuple)):
        for item in obj:
            _found(item, out)
    elif isinstance(obj, dict):
        for item in obj.values():
            _found(item, out)
    return out


def storage_base(t):
    """The address where `t`'s storage starts (a held page's view starts its storage), or None
    for tensors that cannot lie in a page (not strided CPU memory). Call with torch functions
    disabled."""
    if not isinstance(t, Tensor) or t.layout != torch.strided or t.device.type != "cpu":
        return None
    return t.data_ptr() - t.storage_offset() * t.element_size()


def unalias(obj, pages):
    """`obj` with every tensor that lies in one of `pages` (base addresses) cloned; an
    offloaded parameter itself is kept (later reads of it are served again)."""
    if isinstance(obj, Tensor):
        if isinstance(obj, OffloadedParameter):
            return obj
        with DisableTorchFunction():
            return obj.clone() if storage_base(obj) in pages else obj
    if isinstance(obj, (tuple, list)):
        items = [unalias(item, pages) for item in obj]
        if all(a is b for a, b in zip(items, obj)):
            return obj
        return type(obj)(*items) if hasattr(obj, "_fields") else type(obj)(items)
    if isinstance(obj, dict):
        changed = {k: unalias(v, pages) for k, v in obj.items()}
        if all(changed[k] is v for k, v in obj.items()):
            return obj
        obj = obj.copy()
        obj.update(changed)
        return obj
    return obj


# ---- saved tensors ---------------------------------------------------------------------------
class _ParamSlice:
    """A saved tensor that lies in a held parameter's page (Note [Parameter reads])."""

    __slots__ = ("entry", "dtype", "size", "stride", "offset", "reader")

    def __init__(self, entry, t):
        self.entry = entry
        self.dtype = t.dtype
        self.size = t.size()
        self.stride = t.stride()
        self.offset = t.storage_offset()
        self.reader = entry.state.reader()  # the module that read it in forward


def _pack(t):
    with DisableTorchFunction():
        entry = HELD_PAGES.get(storage_base(t))
        if entry is not None:
            return _ParamSlice(entry, t)
        # detach(): an output saved by its own grad_fn must not reference that grad_fn.
        return t.detach()


def _unpack(packed):
    if not isinstance(packed, _ParamSlice):
        return packed
    e = packed.entry
    if e.holds == 0:  # no module's backward holds it: read from outside, or by a bare forward()
        who = f"the backward of module '{packed.reader}'" if packed.reader else "backward"
        e.state.hold_for_backward((e,), who)
    base = e.view
    with DisableTorchFunction():
        if packed.dtype != base.dtype:
            base = base.view(packed.dtype)
        return base.as_strided(packed.size, packed.stride, packed.offset)


SAVED_TENSOR_HOOKS = torch.autograd.graph.saved_tensors_hooks(_pack, _unpack)


# ---- the parameter class ---------------------------------------------------------------------
def _entry(p):
    return p._strata_entry


def _refuse(e, what, hint):
    raise RuntimeError(f"strata.torch: {what} of offloaded parameter '{e.name}'"
                       f"{e.state._during()}: {hint}")


_DATA_HINT = ("outside a read its values are in Strata's pages, not in p.data. Use the "
              "parameter itself: torch calls on it read its values (p.detach().clone(), "
              "p.copy_(x) under torch.no_grad()), or model.state_dict() / load_state_dict(), "
              "or st.save / st.load")


class OffloadedParameter(torch.nn.Parameter):
    """A parameter whose values live in Strata's pages (Note [Parameter reads]): the model's own
    Parameter object, its class swapped at offload, so identity, isinstance(p, nn.Parameter) and
    the optimizer's references hold. `_strata_entry` is its ParamEntry."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if kwargs is None:
            kwargs = {}
        if func in _PASS:
            with DisableTorchFunction():
                return func(*args, **kwargs)
        if torch._C._get_tracing_state() is not None:
            raise RuntimeError("strata.torch: torch.jit.trace of an offloaded model: the traced "
                               "graph would compute with empty placeholders. Trace the model "
                               "before st.offload, or after st.close(model, restore=True)")
        if func in _SHAPE or func in _REFUSED or func == _DATA_GET or func == _DATA_SET:
            return _special(func, args, kwargs)
        if func in _GRAD:
            return _grad(func, args)
        found = _found(kwargs, _found(args, []))
        target = _written(func, args, kwargs)
        if target is not None:
            return _write(target, found, func, args, kwargs)
        unheld = []
        for p in found:
            e = p._strata_entry
            if e.holds == 0 and e not in unheld:
                unheld.append(e)
        if not unheld:
            with DisableTorchFunction():
                return func(*args, **kwargs)
        return _serve(unheld, func, args, kwargs)

    def __reduce_ex__(self, proto):
        # As nn.Parameter's, with the values read from Strata: unpickles as a plain Parameter.
        import collections
        return (torch._utils._rebuild_parameter,
                (_values(self), self.requires_grad, collections.OrderedDict()))

    def __deepcopy__(self, memo):
        if id(self) not in memo:
            memo[id(self)] = torch.nn.Parameter(_values(self), self.requires_grad)
        return memo[id(self)]


def _values(p):
    """A plain tensor with a copy of p's values."""
    e = p._strata_entry
    return e.state.copy_of(e)


def _special(func, args, kwargs):
    p = args[0]
    e = p._strata_entry
    if func == _DATA_SET:
        if args[1] is p:  # Module._apply's no-op conversions (model.float(), .to("cpu")) do this
            return None
        _refuse(e, "replacing p.data", "model.half(), .double(), .to(device) and setting p.data "
                "are not supported after st.offload; convert the model first, or copy values in "
                "with p.copy_(x) under torch.no_grad()")
    if e.holds > 0:  # a view of its page, valid while held: as for any tensor
        with DisableTorchFunction():
            return func(*args, **kwargs)
    if func in _SHAPE:
        if e.meta is None:
            e.meta = torch.empty(e.shape, dtype=e.dtype, device="meta")
        with DisableTorchFunction():
            return func(e.meta, *args[1:], **kwargs)
    if func == _DATA_GET:
        _refuse(e, "p.data", _DATA_HINT)
    _refuse(e, f"{_name(func)}()", "it would hand out memory that is not the parameter's once "
            "the read ends; take a copy first (p.detach().clone())")


def _grad(func, args):
    """p.grad: None unless a gradient waits in Strata (after backward, before the step or
    zero_grad), which p.grad cannot give (torch.nn.utils.clip_grad_norm_ would see none).
    Setting it to None is allowed (zero_grad does), to a tensor refused."""
    e = args[0]._strata_entry
    if func in _GRAD_SETTERS:
        if args[1] is not None:
            _refuse(e, "setting p.grad", "gradients reach Strata through backward only")
        with DisableTorchFunction():
            return func(*args)
    if e.grad is not None and not e.grad_zero:
        _refuse(e, "p.grad", "its gradient went to Strata when backward finished it, so p.grad "
                "does not hold it: clip with st.offload(grad_clip=...), read the norm from "
                "opt.last_grad_norm; opt.zero_grad() or model.zero_grad() discards it")
    with DisableTorchFunction():
        return func(*args)


def _written(func, args, kwargs):
    """The entry a call writes in place (method names ending in '_', in-place operators,
    inplace=True, out=), or None."""
    name = _name(func)
    inplace = ((name.endswith("_") and not name.endswith("__")) or name in _INPLACE_DUNDERS
               or kwargs.get("inplace") is True)
    out = kwargs.get("out")
    if isinstance(out, OffloadedParameter):
        return out._strata_entry
    if not inplace:
        return None
    first = args[0] if args else next(iter(kwargs.values()), None)
    return first._strata_entry if isinstance(first, OffloadedParameter) else None


def _hold_all(entries):
    held = []
    try:
        for e in entries:
            who = e.state.reader()
            e.state.hold(e, f"module '{who}'" if who else None)
            held.append(e)
    except BaseException:
        _unhold_all(held)
        raise
    return held


def _unhold_all(entries):
    first = None
    for e in entries:
        try:
            e.state.unhold(e)
        except RuntimeError as err:
            first = first or err
    if first is not None:
        raise first


def _serve(unheld, func, args, kwargs):
    """Runs a call that reads parameters nobody holds: each is held for the call only."""
    held = _hold_all(unheld)
    try:
        with DisableTorchFunction():
            if torch.is_grad_enabled():
                with SAVED_TENSOR_HOOKS:
                    out = func(*args, **kwargs)
            else:
                out = func(*args, **kwargs)
        return unalias(out, {e.base for e in held})
    finally:
        _unhold_all(held)


def _write(e, found, func, args, kwargs):
    """Runs a call that writes parameter `e` in place, on its page acquired for writing."""
    state = e.state
    p = e.param
    if e.holds > 0:
        _refuse(e, f"{_name(func)}() writing in place", "it is being read (a forward or backward "
                "holds it); change parameters outside forward and backward, under "
                "torch.no_grad()")
    src = args[1] if len(args) > 1 else kwargs.get("src")
    whole = (_name(func) == "zero_" or (_name(func) == "copy_" and isinstance(src, Tensor)
                                       and tuple(src.shape) == e.shape))
    grad_checked = torch.is_grad_enabled() and p.requires_grad  # torch refuses it, after we acquire
    intent = "overwrite" if whole and not grad_checked else "write"
    try:
        memory = state.runtime.acquire(e.tensor, intent, "host")
    except Exception as err:
        raise with_context(err, f"cannot write parameter '{e.name}'") from None
    from ._params import _set_data, _view
    others = _hold_all([q._strata_entry for q in found
                        if q is not p and q._strata_entry.holds == 0])
    try:
        _set_data(p, _view(memory, e))
        with DisableTorchFunction():
            out = func(*args, **kwargs)
        return p if out is p or out is None else out
    finally:
        _set_data(p, torch.empty(0, dtype=e.dtype))
        state.runtime.release(e.tensor)
        _unhold_all(others)
