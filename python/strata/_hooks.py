"""The module hooks: a module holds its own parameters while its forward runs, and again before
its backward (the DeepSpeed ZeRO-3 way). Reads anywhere else (a parent reading a child's
weight, a tie through F.linear, state_dict) are served by the parameters themselves: Note
[Parameter reads] in _reads.py. The hooks are the fast path, holding a module's parameters once
for all its calls, and keep the record of which module runs, for messages.

Forward
  A forward pre-hook on every module of the model pushes a frame (the module runs now); on a
  module that directly owns parameters it holds them (acquire READ, `p.data` = a view of the
  page) and installs the saved-tensor hooks. Its forward post-hook lets them go again. Outputs
  that alias a parameter's page (a module returning a slice of its weight) are cloned first,
  since the page is released right after. The model's own pre-hook first checks that its
  parameters are still the offloaded ones, and ends the frames a forward that raised left.

Backward
  A hook on each output of an owner (registered on the output's grad_fn, so it runs just before
  the module's last operation's backward, hence before any of the module's own backward) holds
  the module's parameters again. A hook on each parameter holds it before autograd accumulates
  its gradient, if nothing holds it then. When a parameter's gradient is final (its
  AccumulateGrad node ran), take_grad hands it to Strata and drops the backward holds. A
  callback at the end of the backward pass drops holds whose gradient never came (frozen
  parameters, unused outputs).
"""
import functools

import torch

from ._reads import SAVED_TENSOR_HOOKS, unalias


class Frame:
    """A module whose forward runs: its name, and what its pre-hook took."""

    __slots__ = ("name", "module", "entries", "saved")

    def __init__(self, name, module):
        self.name = name
        self.module = module
        self.entries = []  # held by the pre-hook
        self.saved = False  # the pre-hook entered SAVED_TENSOR_HOOKS


def _end(state, frame):
    """Undoes a frame's pre-hook (its forward ended, or raised)."""
    if frame.saved:
        SAVED_TENSOR_HOOKS.__exit__(None, None, None)
        frame.saved = False
    entries, frame.entries = frame.entries, []
    state.unhold_all(entries)


def _unwind(state, down_to=0):
    """Ends the frames above index `down_to`: forwards that raised, whose post-hook never ran."""
    while len(state.running) > down_to:
        try:
            _end(state, state.running.pop())
        except RuntimeError:
            pass  # a parameter changed while held: that forward failed already


def _before_forward(state, name, own, module, inputs):
    if module is state.model:
        _unwind(state)
        state.check_unchanged()
    else:
        for pname, e in own:
            if module._parameters.get(pname) is not e.param:
                state.check_unchanged()  # raises, naming it
    frame = Frame(name, module)
    state.running.append(frame)
    for _, e in own:
        try:
            state.hold(e, f"module '{name}'")
        except BaseException:  # e.g. the runtime is closed: the forward fails holding nothing
            state.running.pop()
            state.unhold_all(frame.entries)
            raise
        frame.entries.append(e)
    if own:
        SAVED_TENSOR_HOOKS.__enter__()
        frame.saved = True


def _after_forward(state, module, inputs, output):
    at = len(state.running) - 1
    while at >= 0 and state.running[at].module is not module:
        at -= 1
    if at < 0:
        return output  # its pre-hook's frame was unwound (the model was called inside it)
    _unwind(state, at + 1)  # frames of inner forwards that raised, caught inside this one
    frame = state.running[at]
    try:
        entries = frame.entries
        if frame.saved:
            SAVED_TENSOR_HOOKS.__exit__(None, None, None)
            frame.saved = False
        if entries:
            output = unalias(output, {e.base for e in entries})
            if torch.is_grad_enabled():
                hook = functools.partial(_before_backward, state, frame.name, entries)
                for t in _tensors(output):
                    if t.requires_grad:
                        t.register_hook(hook)
            frame.entries = []
            state.unhold_all(entries)  # the frame still runs: a message names its module
    finally:
        state.running.pop()
    return output


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


def _before_backward(state, name, entries, grad):
    state.hold_for_backward(entries, f"the backward of module '{name}'")


def install(state, own):
    """Hooks on every module of state.model; `own` maps a module to the (attribute name, entry)
    of its direct parameters."""
    for module, name in state.module_names.items():
        mine = own.get(module, [])
        state.handles.append(module.register_forward_pre_hook(
            functools.partial(_before_forward, state, name, mine)))
        state.handles.append(module.register_forward_hook(
            functools.partial(_after_forward, state)))


def _before_accumulate(state, e, grad):
    if e.holds == 0:  # AccumulateGrad checks the gradient against the parameter's shape
        state.hold_for_backward((e,), f"the gradient of '{e.name}'")


def hook_gradient(state, e):
    """Hands e's gradient to Strata as soon as it is final, with e held while autograd
    accumulates it. Call while `p.data` still has the parameter's real shape: the
    AccumulateGrad node records it, and it is kept alive here so that it is the node every
    later forward links to."""
    p = e.param
    e.accumulator = p.expand_as(p).grad_fn.next_functions[0][0]
    state.handles.append(p.register_hook(functools.partial(_before_accumulate, state, e)))
    state.handles.append(e.accumulator.register_hook(
        lambda grad_inputs, grad_outputs: state.take_grad(e)))
