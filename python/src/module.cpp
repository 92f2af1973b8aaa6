// The Python module's native part (imgstat._imgstat): the library's engine
// on one image (a path, bytes, a host array, a CUDA array) and its run API
// (imgstat_run.h) over files and folders. Records are the library's JSON
// (the command line's format); the Python side (imgstat/__init__.py)
// parses them and raises its exceptions. Nothing here prints or exits; the
// pixels' work runs with the GIL released. Each part (binding.h lists them)
// registers its own functions.
#include "binding.h"

namespace {

// The CUDA devices this build can use: 0 without the CUDA backend, a driver
// or a device, or with a driver that cannot serve this build.
int cuda_devices() {
  int count = 0;
  imgstat_error err;
  std::memset(&err, 0, sizeof err);
  imgstat_status st;
  {
    nb::gil_scoped_release nogil; // the driver's first start takes a while
    st = imgstat_gpu_device_count(&count, &err);
  }
  return st == IMGSTAT_OK && count > 0 ? count : 0;
}

} // namespace

NB_MODULE(_imgstat, m) {
  m.doc() = "imgstat's native part: use the imgstat package";
  binding::register_errors(m);
  m.attr("version") = IMGSTAT_VERSION;
  m.attr("cuda") = (bool)imgstat_gpu_compiled();
  m.def("cuda_devices", &cuda_devices);
  binding::register_requests(m);
  binding::register_arrays(m);
  binding::register_normalize(m);
  binding::register_normalize_files(m);
  binding::register_records(m);
  binding::register_runs(m);
  binding::register_dataset(m);
}
