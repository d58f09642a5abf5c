"""The state strata.torch keeps for one offloaded model (OffloadState) and its parameters.

Holds
  A parameter's values exist only in Strata's pages. While some module needs them, the
  parameter is *held*: acquired from Strata (READ, host tier) and `p.data` is a zero-copy view of
  the page (torch.frombuffer over the pointer strata_acquire returned). `holds` counts the users
  (a module's forward, each backward that re-acquired it), so a parameter shared by two modules
  (tied weights) or used re-entrantly stays acquired while anyone holds it; the last one puts
  the empty placeholder back into `p.data` and releases the page.

Gradients
  When autograd has the final gradient of a parameter (its AccumulateGrad node ran, once, with
  every use summed), take_grad adds it into the Strata gradient tensor and drops p.grad. After
  a step (which discards the gradients) or zero_grad the gradient tensor reads as zeros, so the
  next gradient is written with OVERWRITE, which loads nothing.
"""
import torch


class ParamEntry:
    """One offloaded parameter: its Strata tensors and who holds it now."""

    __slots__ = ("name", "group", "param", "shape", "dtype", "tensor", "grad", "weight_decay", "holds",
                 "backward_holds", "base", "grad_zero", "accumulator")

    def __init__(self, name, group, param, weight_decay):
        self.name = name  # its first qualified name in the model
        self.group = group  # the Strata group: the qualified name of the module that owns it
        self.param = param
        self.shape = tuple(param.shape)
        self.dtype = param.dtype
        self.weight_decay = weight_decay
        self.tensor = None  # strata Tensor (role PARAMETER)
        self.grad = None  # strata Tensor (role GRADIENT); None for a frozen parameter
        self.holds = 0
        self.backward_holds = 0  # of `holds`, those a backward took (dropped at take_grad)
        self.base = None  # data_ptr of the held page view (the key of OffloadState.held)
        self.grad_zero = True  # the Strata gradient reads as zeros (never written, discarded)
        self.accumulator = None  # the AccumulateGrad node: kept alive (see _hooks.py)

    @property
    def nbytes(self):
        n = 1
        for d in self.shape:
            n *= d
        return n * torch.tensor([], dtype=self.dtype).element_size()


def _view(memory, entry):
    """The page memory Strata returned as a tensor of the parameter's shape, no copy."""
    return torch.frombuffer(memory, dtype=entry.dtype).view(entry.shape)


class OffloadState:
    """What offload() attaches to the model (model._strata)."""

    def __init__(self, runtime, entries, grad_clip):
        self.runtime = runtime
        self.entries = entries  # in registration order (resume needs the same order)
        self.by_param = {id(e.param): e for e in entries}
        self.held = {}  # base data_ptr of a held parameter's page view -> entry
        self.handles = []  # module hook handles, removed by close()
        self.grad_clip = grad_clip
        self.closed = False

    # ---- holds -----------------------------------------------------------------------------
    def hold(self, e):
        if e.holds == 0:
            view = _view(self.runtime.acquire(e.tensor, "read", "host"), e)
            e.param.data = view
            e.base = view.data_ptr()
            self.held[e.base] = e
        e.holds += 1

    def unhold(self, e):
        e.holds -= 1
        if e.holds == 0:
            # The placeholder first: torch must never point at a released page.
            e.param.data = torch.empty(0, dtype=e.dtype)
            del self.held[e.base]
            e.base = None
            self.runtime.release(e.tensor)

    def hold_for_backward(self, entries):
        for e in entries:
            self.hold(e)
            e.backward_holds += 1

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

    def overwrite(self, e, source):
        """Sets the parameter's values from `source` (a tensor of its shape)."""
        mem = self.runtime.acquire(e.tensor, "overwrite", "host")
        try:
            with torch.no_grad():
                _view(mem, e).copy_(source)
        finally:
            self.runtime.release(e.tensor)

    # ---- gradients and the optimizer -----------------------------------------------------------
    def take_grad(self, e):
        g = e.param.grad
        if g is not None:
            e.param.grad = None
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
        # A backward is over when the optimizer steps: holds it left (it raised half-way) go.
        self.drop_backward_holds(self.entries)
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
        for e in self.entries:
            e.param.grad = None

    # ---- the end ---------------------------------------------------------------------------------
    def close(self, restore):
        if self.closed:
            return
        for e in self.entries:  # holds left by a forward or backward that raised
            e.backward_holds = 0
            while e.holds > 0:
                self.unhold(e)
        if restore:  # plain torch tensors again, copied out of Strata's pages
            for e in self.entries:
                values = self.read(e).clone()
                self.done(e)
                e.param.data = values
        self.runtime.close()
        self.closed = True
        if restore:
            for h in self.handles:
                h.remove()
            self.handles = []
        # Otherwise the hooks stay: a forward of the closed model raises strata.Error
        # ("runtime is closed") instead of computing with the empty placeholders.
