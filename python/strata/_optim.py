"""The optimizer strata.torch.offload returns: torch.optim's interface over Strata's AdamW.

It is a torch.optim.Optimizer (so learning-rate schedulers accept it) whose param_groups are
the decay / no-decay groups of the offloaded parameters. step() starts Strata's step and returns
at once: the update runs on Strata's threads, and the next acquire of a parameter (its module's
forward) waits for that parameter's update only.

What is read at each step: lr, betas, eps and grad_clip from param_groups (so a scheduler can
change lr); they must be equal across the groups, since Strata's step has one of each.
weight_decay is fixed per parameter when the model is offloaded (strata_register_pair).
"""
import torch


class StrataAdamW(torch.optim.Optimizer):
    def __init__(self, state, groups, lr, betas, eps, weight_decay, grad_clip):
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                        grad_clip=grad_clip)
        super().__init__(groups, defaults)
        self._strata = state
        self._registered_decay = [g["weight_decay"] for g in self.param_groups]

    def add_param_group(self, param_group):
        if getattr(self, "_strata", None) is not None:  # torch's __init__ adds the first ones
            raise ValueError("strata.torch: the optimizer's parameters are fixed at st.offload; "
                             "Strata's AdamW would never update a group added later")
        super().add_param_group(param_group)

    def state_dict(self):
        raise NotImplementedError(
            "strata.torch: the AdamW moments and the step count live in Strata, not in "
            "opt.state_dict(); save them with st.checkpoint(model, name) (checkpoint_dir) and "
            "reopen with st.offload(..., resume=name)")

    def load_state_dict(self, state_dict):
        raise NotImplementedError(
            "strata.torch: the AdamW moments and the step count come from a checkpoint: "
            "st.offload(..., checkpoint_dir=..., resume=name)")

    def _hyper(self):
        first = self.param_groups[0]
        keys = ("lr", "betas", "eps", "grad_clip")
        for i, g in enumerate(self.param_groups):
            for k in keys:
                same = tuple(g[k]) == tuple(first[k]) if k == "betas" else g[k] == first[k]
                if not same:
                    raise ValueError(f"strata.torch: param_groups[{i}]['{k}'] = {g[k]} differs "
                                     f"from param_groups[0]'s {first[k]}; Strata's step has one")
            if g["weight_decay"] != self._registered_decay[i]:
                raise ValueError(f"strata.torch: param_groups[{i}]['weight_decay'] changed to "
                                 f"{g['weight_decay']}; it is fixed when the model is offloaded")
        return first["lr"], first["betas"], first["eps"], first["grad_clip"]

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        lr, betas, eps, grad_clip = self._hyper()
        self._strata.step(lr, betas, eps, grad_clip)
        return loss

    def zero_grad(self, set_to_none=True):
        """Discards the gradients accumulated since the last step (a step already discards
        the ones it used, so right after step() this waits for nothing)."""
        self._strata.zero_grad()

    @property
    def last_grad_norm(self):
        """The global gradient norm of the last finished step (before clipping)."""
        return self._strata.runtime.last_grad_norm()
