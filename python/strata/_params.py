"""The state strata.torch keeps for one offloaded model (OffloadState) and its parameters.

Holds
  A parameter's values exist only in Strata's pages. While something reads them, the
  parameter is *held*: acquired from Strata (READ, host tier) and `p.data` is a zero-copy view of
  the page (torch.frombuffer over the pointer strata_acquire returned). `holds` counts the users
  (a module's forward, each backward that re-acquired it, one torch call reading it from outside
  its module: Note [Parameter reads] in _reads.py), so a parameter shared by two modules (tied
  weights) or used re-entrantly stays acquired while anyone holds it; the last one puts the
  empty placeholder back into `p.data` and releases the page. A parameter changed in place while
  held (its `_version` moved) is an error at that release: a page lent for reading is not
  written back, so the change could be lost.

Gradients
  When autograd has the final gradient of a parameter (its AccumulateGrad node ran, once, with
  every use summed), take_grad adds it into the Strata gradient tensor and drops p.grad. After
  a step (which discards the gradients) or zero_grad the gradient tensor reads as zeros, so the
  next gradient is written with OVERWRITE, which loads nothing.
"""
import torch
from torch._C import DisableTorchFunction

import strata

# Every held page in the process, by the address its view starts at -> its entry. The
# saved-tensor hooks (_hooks.py) are torch's, process-wide: a tensor autograd saves may lie in a
# page of any offloaded model, so the lookup spans every runtime. One dict, not one per state,
# since torch offers no per-model scope for those hooks; addresses are unique in a process.
HELD_PAGES = {}


class ParamEntry:
    """One offloaded parameter: its Strata tensors and who holds it now."""

    __slots__ = ("name", "group", "param", "shape", "dtype", "tensor", "grad", "weight_decay",
                 "holds", "backward_holds", "base", "view", "version", "grad_zero",
                 "accumulator", "state", "slots", "meta")

    def __init__(self, name, group, param, weight_decay):
        self.name = name  # its first qualified name in the model
        self.group = group  # the Strata group (one for the model: _layout.GROUP)
        self.param = param
        self.shape = tuple(param.shape)
        self.dtype = param.dtype
        self.weight_decay = weight_decay
        self.tensor = None  # strata Tensor (role PARAMETER)
        self.grad = None  # strata Tensor (role GRADIENT); None for a frozen parameter
        self.holds = 0
        self.backward_holds = 0  # of `holds`, those a backward took (dropped at take_grad)
        self.base = None  # data_ptr of the held page view (the key of HELD_PAGES)
        self.view = None  # the held page view (p.data while held)
        self.version = 0  # p._version when the first hold began
        self.grad_zero = True  # the Strata gradient reads as zeros (never written, discarded)
        self.accumulator = None  # the AccumulateGrad node: kept alive (see _hooks.py)
        self.state = None  # the OffloadState
        self.slots = []  # (module, attribute name): where the model holds it (2+ when tied)
        self.meta = None  # a meta tensor of its shape: answers size(), stride(), ... unheld

    @property
    def nbytes(self):
        n = 1
        for d in self.shape:
            n *= d
        return n * torch.tensor([], dtype=self.dtype).element_size()


def _view(memory, entry):
    """The page memory Strata returned as a tensor of the parameter's shape, no copy."""
    return torch.frombuffer(memory, dtype=entry.dtype).view(entry.shape)


def with_context(err, what):
    """`err` (a strata.Error) again, its message prefixed by `what`, its status kept."""
    out = strata.Error(f"strata.torch: {what}: {err}")
    out.status = getattr(err, "status", None)
    out.code = getattr(err, "code", None)
    return out


def _set_data(p, value):
    with DisableTorchFunction():  # our own swap, not a replacement (_reads.py refuses those)
        p.data = value


class OffloadState:
    """What offload() attaches to the model (model._strata)."""

    def __init__(self, runtime, model, entries, grad_clip):
        self.runtime = runtime
        self.model = model
        self.entries = entries  # in registration order (resume needs the same order)
        self.by_param = {id(e.param): e for e in entries}
        self.handles = []  # hook handles, removed by close(restore=True)
        self.grad_clip = grad_clip
        self.closed = False
        self.running = []  # forward frames (_hooks.Frame) of the modules running now, innermost last
        self.callback_queued = False  # an end-of-backward callback is queued (drops holds)
        self.module_names = {}  # module -> its first qualified name (the model: its class name)
        self.unoffloaded = set()  # ids of the model's parameters left alone (empty ones)

    def __deepcopy__(self, memo):
        raise RuntimeError(
            "strata.torch: an offloaded model cannot be copied (copy.deepcopy, pickle): its "
            "parameters live in a Strata runtime. Copy it before st.offload, or take "
            "model.state_dict() (or st.save) and load that into a new model")

    __reduce_ex__ = __deepcopy__

    def reader(self):
        """The module whose forward runs now (innermost), for messages."""
        return self.running[-1].name if self.running else None

    # ---- holds -----------------------------------------------------------------------------
    def hold(self, e, who=None):
        """Acquires e's page for reading (if nobody holds it) and counts the hold. A failed
        acquire raises strata.Error naming the parameter and `who` needed it ("module 'h.0'",
        "the backward of module 'h.0'"; None: a read outside any module's forward)."""
        if e.holds == 0:
            try:
                memory = self.runtime.acquire(e.tensor, "read", "host")
            except strata.Error as err:
                who = who or "a read outside any module's forward"
                raise with_context(err, f"cannot read parameter '{e.name}' for {who}") from None
            view = _view(memory, e)
            _set_data(e.param, view)
            e.view = view
            e.base = view.data_ptr()
            with DisableTorchFunction():
                e.version = e.param._version
            HELD_PAGES[e.base] = e
        e.holds += 1

    def unhold(self, e):
        """Drops one hold; the last one releases the page. Raises (after releasing) when the
        parameter was changed in place while held."""
        e.holds -= 1
        if e.holds > 0:
            return
        # The placeholder first: torch must never point at a released page.
        _set_data(e.param, torch.empty(0, dtype=e.dtype))
        with DisableTorchFunction():
            changed = e.param._version != e.version
        del HELD_PAGES[e.base]
        e.base = e.view = None
        self.runtime.release(e.tensor)
        if changed:
            raise RuntimeError(
                f"strata.torch: parameter '{e.name}' was changed in place while Strata lent it "
                f"for reading{self._during()}; such a change may be lost, so it is not "
                "supported (nn.Embedding(max_norm=...) renormalizes its weight this way). Change "
                "parameters outside forward and backward, under torch.no_grad()")

    def _during(self):
        r = self.reader()
        return f" (module '{r}' was running)" if r else ""

    def unhold_all(self, entries):
        """unhold each of `entries`, then raise the first error, if any."""
        first = None
        for e in entries:
            try:
                self.unhold(e)
            except RuntimeError as err:
                first = first or err
        if first is not None:
            raise first

    def hold_for_backward(self, entries, who=None):
        for e in entries:
            self.hold(e, who)
            e.backward_holds += 1
        if not self.callback_queued:
            # Holds whose gradient never comes (frozen parameters, unused outputs, values read
            # by a node that does not feed their gradient) end with the backward pass.
            torch.autograd.Variable._execution_engine.queue_callback(self._end_backward)
            self.callback_queued = True

    def _end_backward(self):
        self.callback_queued = False
        self.drop_backward_holds(self.entries)

    def drop_backward_holds(self, entries):
        for e in entries:
            while e.backward_holds > 0:
                e.backward_holds -= 1
                self.unhold(e)

    def read(self, e):
        """The parameter's current values as a tensor valid until `done(e)` (save, restore)."""
        return _view(self.runtime.acquire(e.tensor, "read", "host"), e)

    def done(self, e):
        self.runtime.release(e.tensor)

    def copy_of(self, e):
        """A plain tensor holding a copy of the parameter's values."""
        if e.holds > 0:
            return e.view.clone()
        values = self.read(e)
        try:
            return values.clone()
        finally:
            self.done(e)

    def overwrite(self, e, source):
        """Sets the parameter's values from `source` (a tensor of its shape)."""
        mem = self.runtime.acquire(e.tensor, "overwrite", "host")
        try:
            with torch.no_grad():
                _view(mem, e).copy_(source)
        finally:
            self.runtime.release(e.tensor)

    # ---- the model as offloaded ----------------------------------------------------------------
    def check_unchanged(self):
        """Raises when the model's parameters are no longer the offloaded ones: one replaced
        (model.fc.weight = nn.Parameter(...)), removed, or added with a new module or attribute.
        The forward would compute with values the optimizer never updates."""
        for e in self.entries:
            for module, pname in e.slots:
                if module._parameters.get(pname) is not e.param:
                    where = self.module_names.get(module, "?")
                    raise RuntimeError(
                        f"strata.torch: parameter '{pname}' of module '{where}' was replaced "
                        f"or removed after st.offload (it was offloaded as '{e.name}'); an "
                        "offloaded model must keep its parameter objects. Set values with "
                        "load_state_dict, st.load, or p.copy_(...) under torch.no_grad()")
        for name, p in self.model.named_parameters():
            entry = getattr(p, "_strata_entry", None)
            if (entry is None or entry.state is not self) and id(p) not in self.unoffloaded:
                raise RuntimeError(
                    f"strata.torch: parameter '{name}' was added after st.offload; Strata's "
                    "optimizer would never update it. Build the whole model before offloading")

    # ---- gradients and the optimizer -----------------------------------------------------------
    def take_grad(self, e):
        with DisableTorchFunction():
            g = e.param.grad
            e.param.grad = None
        if g is not None:
            intent = "overwrite" if e.grad_zero else "write"
            mem = self.runtime.acquire(e.grad, intent, "host")
            try:
                with torch.no_grad():
                    dst = _view(mem, e)
                    if e.grad_zero:
                        dst.copy_(g)
                    else:
                        dst.add_(g)
            finally:
                self.runtime.release(e.grad)
            e.grad_zero = False
        self.drop_backward_holds((e,))

    def step(self, lr, betas, eps, grad_clip):
        # A backward is over when the optimizer steps: holds it left (it raised half-way, so
        # autograd never ran its end callback) go.
        self.drop_backward_holds(self.entries)
        self.callback_queued = False
        self.check_unchanged()
        self.runtime.step(lr=lr, beta1=betas[0], beta2=betas[1], eps=eps,
                          max_grad_norm=grad_clip or 0.0, discard_grads=True)
        # The step discards each gradient once its update read it (asynchronously: an acquire
        # of the gradient waits for that), so every gradient reads as zeros from here on.
        for e in self.entries:
            e.grad_zero = True

    def zero_grad(self):
        dirty = [e for e in self.entries if e.grad is not None and not e.grad_zero]
        if dirty:  # only gradients written since the last step or zero_grad: usually none
            self.runtime.step_wait()
            for e in dirty:
                self.runtime.discard(e.grad)
                e.grad_zero = True
        with DisableTorchFunction():
            for e in self.entries:
                e.param.grad = None

    # ---- the end ---------------------------------------------------------------------------------
    def close(self, restore):
        if self.closed:
            return
        for e in self.entries:  # holds left by a forward or backward that raised
            e.backward_holds = 0
            while e.holds > 0:
                try:
                    self.unhold(e)
                except RuntimeError:
                    pass  # changed in place while held: already said, or closing anyway
        self.running.clear()
        if restore:  # plain torch tensors again, copied out of Strata's pages
            for e in self.entries:
                _set_data(e.param, self.copy_of(e))
        self.runtime.close()
        self.closed = True
        if restore:
            for h in self.handles:
                h.remove()
            self.handles = []
        # Otherwise the hooks stay: a forward of the closed model raises strata.Error
        # ("runtime is closed") instead of computing with the empty placeholders.
