"""Strata's memory runtime for Python.

    import strata           # the C API (include/strata.h) as strata.Runtime
    import strata.torch     # st.offload(model, ...): PyTorch training on Strata's tiers

Every failed Strata call raises strata.Error (a RuntimeError): str(e) is Strata's own message
(what failed and what to change), e.status the status name, e.g. "STRATA_RESOURCE_EXHAUSTED".
strata.torch is not imported here, so `import strata` does not load torch.
"""
from ._C import DType, Error, Intent, Role, Runtime, Tensor, Tier, version

__version__ = version()
__all__ = ["DType", "Error", "Intent", "Role", "Runtime", "Tensor", "Tier", "version"]
