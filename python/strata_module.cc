// strata._C: the Python binding of include/strata.h (PyRuntime in runtime_binding.h does the
// calls; this file maps Python arguments and results onto them).
//
// Enum arguments (dtype, role, intent, tier) take the enum values or their names as strings
// ("f32", "parameter", "write", "host"), so that strata/torch.py and users need no constants.
// Options take strings or ints ("64M" or 67108864); a list sets a key several times (nvme_dir).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cctype>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "python/runtime_binding.h"
#include "strata.h"

namespace py = pybind11;
using strata::python::PyRuntime;
using strata::python::PyTensor;
using strata::python::StrataError;

namespace {

// Name (lowercase) -> value; the error lists the accepted names.
template <class Enum>
Enum FromName(const py::object& value, const std::map<std::string, Enum>& names,
              const char* what) {
  if (!py::isinstance<py::str>(value)) return value.cast<Enum>();
  std::string key = value.cast<std::string>();
  for (char& c : key) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  auto it = names.find(key);
  if (it != names.end()) return it->second;
  std::string known;
  for (const auto& [name, unused] : names) known += (known.empty() ? "" : ", ") + name;
  throw StrataError{STRATA_INVALID_ARGUMENT,
                    std::string("unknown ") + what + " '" + key + "' (one of: " + known + ")"};
}

strata_dtype ToDtype(const py::object& v) {
  static const std::map<std::string, strata_dtype> names = {
      {"f32", STRATA_F32},   {"float32", STRATA_F32}, {"f16", STRATA_F16},
      {"float16", STRATA_F16}, {"bf16", STRATA_BF16}, {"bfloat16", STRATA_BF16},
      {"f64", STRATA_F64},   {"float64", STRATA_F64}, {"i32", STRATA_I32},
      {"int32", STRATA_I32}, {"i64", STRATA_I64},     {"int64", STRATA_I64},
      {"u8", STRATA_U8},     {"uint8", STRATA_U8}};
  return FromName(v, names, "dtype");
}

strata_role ToRole(const py::object& v) {
  static const std::map<std::string, strata_role> names = {
      {"parameter", STRATA_ROLE_PARAMETER},
      {"gradient", STRATA_ROLE_GRADIENT},
      {"optimizer_state", STRATA_ROLE_OPTIMIZER_STATE},
      {"other", STRATA_ROLE_OTHER}};
  return FromName(v, names, "role");
}

strata_intent ToIntent(const py::object& v) {
  static const std::map<std::string, strata_intent> names = {
      {"read", STRATA_READ}, {"write", STRATA_WRITE}, {"overwrite", STRATA_OVERWRITE}};
  return FromName(v, names, "intent");
}

strata_tier ToTier(const py::object& v) {
  static const std::map<std::string, strata_tier> names = {{"device", STRATA_TIER_DEVICE},
                                                           {"host", STRATA_TIER_HOST}};
  return FromName(v, names, "tier");
}

// One option value as the C API's string; None leaves the key unset, a list/tuple repeats it.
void AddOption(std::vector<std::pair<std::string, std::string>>* out, const std::string& key,
               const py::handle& value) {
  if (value.is_none()) return;
  if (py::isinstance<py::list>(value) || py::isinstance<py::tuple>(value)) {
    for (const py::handle& item : value) AddOption(out, key, item);
    return;
  }
  if (py::isinstance<py::bool_>(value)) {
    out->emplace_back(key, value.cast<bool>() ? "1" : "0");
  } else if (py::isinstance<py::int_>(value)) {
    out->emplace_back(key, std::to_string(value.cast<long long>()));
  } else {
    out->emplace_back(key, py::str(value).cast<std::string>());  // str, float, pathlib.Path
  }
}

std::vector<std::pair<std::string, std::string>> CollectOptions(const py::object& options,
                                                                 const py::kwargs& kwargs) {
  std::vector<std::pair<std::string, std::string>> out;
  if (!options.is_none()) {
    for (const auto& [key, value] : options.cast<py::dict>()) {
      AddOption(&out, py::str(key).cast<std::string>(), value);
    }
  }
  for (const auto& [key, value] : kwargs) AddOption(&out, py::str(key).cast<std::string>(), value);
  return out;
}

py::dict StatsDict(const strata_stats& s) {
  py::dict d;
#define STRATA_STAT(field) d[#field] = s.field
  STRATA_STAT(device_bytes); STRATA_STAT(device_peak_bytes); STRATA_STAT(device_budget_bytes);
  STRATA_STAT(host_bytes); STRATA_STAT(host_peak_bytes); STRATA_STAT(host_budget_bytes);
  STRATA_STAT(nvme_bytes); STRATA_STAT(nvme_peak_bytes); STRATA_STAT(nvme_budget_bytes);
  STRATA_STAT(host_to_device_bytes); STRATA_STAT(device_to_host_bytes);
  STRATA_STAT(nvme_read_bytes); STRATA_STAT(nvme_write_bytes);
  STRATA_STAT(stall_seconds); STRATA_STAT(acquires); STRATA_STAT(host_misses);
  STRATA_STAT(predicted_acquires); STRATA_STAT(unpredicted_acquires); STRATA_STAT(prefetches);
  STRATA_STAT(steps); STRATA_STAT(tensors); STRATA_STAT(pages); STRATA_STAT(page_bytes);
#undef STRATA_STAT
  return d;
}

// strata.Error: a RuntimeError whose message is strata_last_error(), with the status as
// `.status` ("STRATA_FAILED_PRECONDITION") and `.code` (its number).
void RegisterError(py::module_& m) {
  static py::handle error = PyErr_NewExceptionWithDoc(
      "strata.Error",
      "A Strata call failed: str(e) is Strata's message, e.status the status name "
      "(e.g. 'STRATA_RESOURCE_EXHAUSTED'), e.code its number.",
      PyExc_RuntimeError, nullptr);
  m.add_object("Error", error);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const StrataError& e) {
      py::object exc = py::reinterpret_borrow<py::object>(error)(e.message);
      exc.attr("status") = strata_status_name(e.status);
      exc.attr("code") = static_cast<int>(e.status);
      PyErr_SetObject(error.ptr(), exc.ptr());
    }
  });
}

void BindEnums(py::module_& m) {
  py::enum_<strata_dtype>(m, "DType")
      .value("F32", STRATA_F32).value("F16", STRATA_F16).value("BF16", STRATA_BF16)
      .value("F64", STRATA_F64).value("I32", STRATA_I32).value("I64", STRATA_I64)
      .value("U8", STRATA_U8);
  py::enum_<strata_role>(m, "Role")
      .value("PARAMETER", STRATA_ROLE_PARAMETER).value("GRADIENT", STRATA_ROLE_GRADIENT)
      .value("OPTIMIZER_STATE", STRATA_ROLE_OPTIMIZER_STATE).value("OTHER", STRATA_ROLE_OTHER);
  py::enum_<strata_intent>(m, "Intent")
      .value("READ", STRATA_READ).value("WRITE", STRATA_WRITE)
      .value("OVERWRITE", STRATA_OVERWRITE);
  py::enum_<strata_tier>(m, "Tier")
      .value("DEVICE", STRATA_TIER_DEVICE).value("HOST", STRATA_TIER_HOST);
}

void BindTensor(py::module_& m) {
  py::class_<PyTensor>(m, "Tensor", "A registered tensor's handle (Runtime.register).")
      .def_readonly("name", &PyTensor::name)
      .def_readonly("bytes", &PyTensor::bytes)
      .def_readonly("dtype", &PyTensor::dtype)
      .def_readonly("role", &PyTensor::role)
      .def("__repr__", [](const PyTensor& t) {
        return "<strata.Tensor '" + t.name + "' " + std::to_string(t.bytes) + " bytes>";
      });
}

void BindRuntime(py::module_& m) {
  strata_step_options defaults;
  strata_step_options_init(&defaults);  // torch's AdamW defaults, from the C layer
  py::class_<PyRuntime>(m, "Runtime", "One Strata runtime (include/strata.h).")
      .def(py::init([](const py::object& options, const py::kwargs& kwargs) {
             return new PyRuntime(CollectOptions(options, kwargs));
           }),
           py::arg("options") = py::none())
      .def("register",
           [](PyRuntime& rt, const std::string& name, uint64_t bytes, const py::object& dtype,
              const py::object& role, const py::object& group) {
             std::string g = group.is_none() ? "" : group.cast<std::string>();
             return rt.register_tensor(name, bytes, ToDtype(dtype), ToRole(role),
                                       group.is_none() ? nullptr : &g);
           },
           py::arg("name"), py::arg("bytes"), py::arg("dtype") = "f32",
           py::arg("role") = "other", py::arg("group") = py::none())
      .def("find", &PyRuntime::find, py::arg("name"))
      .def("register_pair", &PyRuntime::register_pair, py::arg("param"), py::arg("grad"),
           py::arg("weight_decay") = 0.0f)
      .def("acquire",
           [](PyRuntime& rt, const PyTensor& t, const py::object& intent,
              const py::object& tier) {
             void* ptr = rt.acquire(t, ToIntent(intent), ToTier(tier));
             // Writable even for READ: torch.frombuffer warns on read-only buffers. The view is
             // valid until release(); it is the page itself, no copy.
             return py::memoryview::from_memory(ptr, static_cast<py::ssize_t>(t.bytes), false);
           },
           py::arg("tensor"), py::arg("intent") = "read", py::arg("tier") = "host")
      .def("release", &PyRuntime::release, py::arg("tensor"))
      .def("prefetch", &PyRuntime::prefetch, py::arg("tensor"))
      .def("discard", &PyRuntime::discard, py::arg("tensor"))
      .def("step",
           [](PyRuntime& rt, float lr, float beta1, float beta2, float eps, float max_grad_norm,
              bool discard_grads) {
             strata_step_options o{lr, beta1, beta2, eps, max_grad_norm, discard_grads ? 1 : 0};
             rt.step(o);
           },
           py::arg("lr") = defaults.lr, py::arg("beta1") = defaults.beta1,
           py::arg("beta2") = defaults.beta2, py::arg("eps") = defaults.eps,
           py::arg("max_grad_norm") = defaults.max_grad_norm,
           py::arg("discard_grads") = defaults.discard_grads != 0)
      .def("step_wait", &PyRuntime::step_wait)
      .def("step_count", &PyRuntime::step_count)
      .def("last_grad_norm", &PyRuntime::last_grad_norm)
      .def("checkpoint", &PyRuntime::checkpoint, py::arg("name"))
      .def("drop_checkpoint", &PyRuntime::drop_checkpoint, py::arg("name"))
      .def("stats", [](PyRuntime& rt) { return StatsDict(rt.stats()); })
      .def("close", &PyRuntime::close)
      .def_property_readonly("closed", &PyRuntime::closed)
      .def("__enter__", [](PyRuntime& rt) -> PyRuntime& { return rt; },
           py::return_value_policy::reference)
      .def("__exit__", [](PyRuntime& rt, const py::args&) { rt.close(); });
}

}  // namespace

PYBIND11_MODULE(_C, m) {
  m.doc() = "Strata's C API (include/strata.h) for Python; see strata.torch for PyTorch.";
  RegisterError(m);
  BindEnums(m);
  BindTensor(m);
  BindRuntime(m);
  m.def("version", [] { return std::string(strata_version()); });
  m.def("status_name", [](int status) {
    return std::string(strata_status_name(static_cast<strata_status>(status)));
  });
}
