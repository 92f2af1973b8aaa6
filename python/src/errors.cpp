// Errors across the boundary: the library's texts and paths as Python
// gives and takes them, an input's failure (imgstat.ImageError's path,
// status, message, and its cause, limit and value), and the translator of
// the library's messages into Python exceptions.
#include "binding.h"

namespace binding {

const char *status_name(imgstat_status s) {
  switch (s) {
  case IMGSTAT_OK:
    return "ok";
  case IMGSTAT_ERR_IO:
    return "io";
  case IMGSTAT_ERR_FORMAT:
    return "format";
  case IMGSTAT_ERR_UNSUPPORTED:
    return "unsupported";
  case IMGSTAT_ERR_LIMIT:
    return "limit";
  case IMGSTAT_ERR_NOMEM:
    return "nomem";
  case IMGSTAT_ERR_ARG:
    return "arg";
  case IMGSTAT_ERR_NODEVICE:
    return "nodevice";
  case IMGSTAT_ERR_DEVICE:
    return "device";
  }
  return "unknown";
}

PyObject *text_object(const char *s, size_t n) {
  return PyUnicode_DecodeFSDefaultAndSize(s, (Py_ssize_t)n);
}

PyObject *text_object(const char *s) { return text_object(s, std::strlen(s)); }

nb::object py_text(const std::string &s) {
  PyObject *o = text_object(s.data(), s.size());
  if (!o)
    throw nb::python_error();
  return nb::steal(o);
}

namespace {

// TextError as the Python exception it names.
void translate_text_error(const std::exception_ptr &p, void *) {
  try {
    std::rethrow_exception(p);
  } catch (const TextError &e) {
    PyObject *m = text_object(e.message.data(), e.message.size());
    if (m) {
      PyErr_SetObject(e.type, m);
      Py_DECREF(m);
    }
  }
}

} // namespace

std::string c_path(nb::handle path) {
  PyObject *b = nullptr;
  if (!PyUnicode_FSConverter(path.ptr(), &b))
    throw nb::python_error();
  nb::bytes bytes = nb::steal<nb::bytes>(b);
  return std::string(bytes.c_str(), bytes.size());
}

std::vector<std::string> c_paths(nb::handle paths) {
  std::vector<std::string> out;
  for (nb::handle p : paths)
    out.push_back(c_path(p));
  return out;
}

Failure failure_from(const std::string &path, imgstat_status s,
                     const imgstat_error &err) {
  Failure f{path, status_name(s), err.message};
  f.cause = err.cause;
  f.limit = err.limit;
  f.value = err.value;
  return f;
}

nb::tuple failure_tuple(const Failure &f) {
  nb::object none = nb::none();
  if (f.cause == IMGSTAT_CAUSE_NONE)
    return nb::make_tuple(py_text(f.path), f.status, py_text(f.message), none,
                          none, none);
  return nb::make_tuple(py_text(f.path), f.status, py_text(f.message),
                        imgstat_cause_name(f.cause),
                        f.limit ? nb::cast(f.limit) : none,
                        f.value ? nb::cast(f.value) : none);
}

Failure failure_of(const char *path, const imgstat_job_result *res) {
  return failure_from(path ? path : "", res->status, res->error);
}

void register_errors(nb::module_ &m) {
  (void)m;
  nb::register_exception_translator(translate_text_error);
}

} // namespace binding
