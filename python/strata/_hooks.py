"""The hooks that give modules their parameters just in time (the DeepSpeed ZeRO-3 way).

Forward
  A forward pre-hook on every module that directly owns parameters holds them (acquire READ,
  `p.data` = a view of the page); its forward post-hook lets them go again. Outputs that alias a
  parameter's page (a module returning a slice of its weight) are cloned first, since the page
  is released right after.

Saved tensors
  Autograd saves tensors for backward. A saved *parameter* is kept by reference, so swapping
  `p.data` is what backward sees; but a saved *view* of a parameter (F.linear saves weight.t())
  would keep pointing at the page memory, which is released after forward and may hold another
  tensor by the time backward runs. So, while a parameter owner's forward runs, saved-tensor
  hooks replace every saved tensor that lies in a held page by (parameter, size, stride,
  offset), and rebuild it in backward from the parameter's page as held then.

Backward
  A hook on each output of the module (registered on the output's grad_fn, so it runs just
  before the module's last operation's backward, hence before any of the module's own backward)
  holds the module's parameters again. When a parameter's gradient is final (its AccumulateGrad
  node ran), take_grad hands it to Strata and drops that hold. A callback at the end of the
  backward pass drops holds whose gradient never came (frozen parameters, unused outputs).
"""
import functools

import torch


class _ParamSlice:
    """A saved tensor that lies in a held parameter's page (see Saved tensors above)."""

    __slots__ = ("entry", "dtype", "size", "stride", "offset")

    def __init__(self, entry, t):
        self.entry = entry
        self.dtype = t.dtype
        self.size = t.size()
        self.stride = t.stride()
        self.offset = t.storage_offset()


def _storage_base(t):
    """The address where `t`'s storage starts (a held page's view starts its storage), or None
    for tensors that cannot lie in a page (not strided CPU memory)."""
    if t.layout != torch.strided or t.device.type != "cpu":
        return None
    return t.data_ptr() - t.storage_offset() * t.element_size()


def _saved_tensor_hooks(state):
    def pack(t):
        entry = state.held.get(_storage_base(t))
        if entry is not None:
            return _ParamSlice(entry, t)
        # detach(): an output saved by its own grad_fn must not reference that grad_fn.
        return t.detach()

    def unpack(packed):
        if not isinstance(packed, _ParamSlice):
            return packed
        e = packed.entry
        if e.holds == 0:
            raise RuntimeError(
                f"strata.torch: backward needs parameter '{e.name}', which is not acquired: was "
                "it used outside the forward of the module that owns it? (each module may use "
                "only its own parameters; see docs/embedding.md)")
        base = e.param.data
        if packed.dtype != base.dtype:
            base = base.view(packed.dtype)
        return base.as_strided(packed.size, packed.stride, packed.offset)

    return torch.autograd.graph.saved_tensors_hooks(pack, unpack)


def _tensors(obj):
    """Every tensor in a module's output (a tensor, or tuples, lists and dicts of them)."""
    if isinstance(obj, torch.Tensor):
        yield obj
    elif isinstance(obj, (tuple, list)):
        for item in obj:
            yield from _tensors(item)
    elif isinstance(obj, dict):
        for item in obj.values():
            yield from _tensors(item)


def _unalias(obj, pages):
    """`obj` with every tensor that lies in one of `pages` (base addresses) cloned."""
    if isinstance(obj, torch.Tensor):
        return obj.clone() if _storage_base(obj) in pages else obj
    if isinstance(obj, (tuple, list)):
        items = [_unalias(item, pages) for item in obj]
        if all(a is b for a, b in zip(items, obj)):
            return obj
        return type(obj)(*items) if hasattr(obj, "_fields") else type(obj)(items)
    if isinstance(obj, dict):
        changed = {k: _unalias(v, pages) for k, v in obj.items()}
        if all(changed[k] is v for k, v in obj.items()):
            return obj
        obj = obj.copy()
        obj.update(changed)
        return obj
    return obj


def _before_forward(state, entries, saved, module, inputs):
    for i, e in enumerate(entries):
        try:
            state.hold(e)
        except BaseException:  # e.g. the runtime is closed: the forward fails holding nothing
            for held in entries[:i]:
                state.unhold(held)
            raise
    saved.__enter__()


def _after_forward(state, entries, saved, module, inputs, output):
    saved.__exit__()
    output = _unalias(output, {e.base for e in entries})
    if torch.is_grad_enabled():
        hook = functools.partial(_before_backward, state, entries)
        for t in _tensors(output):
            if t.requires_grad:
                t.register_hook(hook)
    for e in entries:
        state.unhold(e)
    return output


def _before_backward(state, entries, grad):
    state.hold_for_backward(entries)
    torch.autograd.Variable._execution_engine.queue_callback(
        functools.partial(state.drop_backward_holds, entries))


def install(state, owners):
    """Hooks on each module in `owners` (module -> the entries of its direct parameters)."""
    saved = _saved_tensor_hooks(state)
    for module, entries in owners.items():
        state.handles.append(module.register_forward_pre_hook(
            functools.partial(_before_forward, state, entries, saved)))
        state.handles.append(module.register_forward_hook(
            functools.partial(_after_forward, state, entries, saved)))


def hook_gradient(state, e):
    """Hands e's gradient to Strata as soon as it is final. Call while `p.data` still has the
    parameter's real shape: the AccumulateGrad node records it and checks gradients against
    it, and it is kept alive here so that it is the node every later forward links to."""
    p = e.param
    e.accumulator = p.expand_as(p).grad_fn.next_functions[0][0]
    state.handles.append(e.accumulator.register_hook(
        lambda grad_inputs, grad_outputs: state.take_grad(e)))
