// What a call asks (ddof, histograms, percentiles, backend) and the option
// words several calls share; the engines, one per backend; one image's
// statistics: a file by its path, an encoded image in bytes.
#include "binding.h"

#include <map>

namespace binding {

Request make_request(int ddof, bool histogram,
                     std::optional<std::vector<double>> percentiles,
                     const std::string &backend) {
  Request r;
  if (ddof != 0 && ddof != 1)
    throw nb::value_error("ddof must be 0 or 1");
  r.ddof = ddof;
  r.histogram = histogram;
  if (percentiles) {
    if (percentiles->size() > IMGSTAT_MAX_PERCENTILES)
      throw nb::value_error("too many percentiles");
    for (double p : *percentiles)
      if (!(p >= 0 && p <= 100))
        throw nb::value_error("percentiles must be in [0, 100]");
    r.percentiles = *percentiles;
    r.histogram = true; // as --percentiles does
  }
  if (!imgstat_backend_from_name(backend.c_str(), &r.backend))
    throw nb::value_error("backend must be 'auto', 'cpu' or 'gpu'");
  return r;
}

void set_valid(Request &r, std::optional<std::vector<double>> nodata,
               bool no_file_nodata, nb::handle mask, nb::handle labels,
               std::optional<std::string> mask_suffix) {
  if (mask_suffix)
    r.mask_suffix = *mask_suffix;
  if (nodata) {
    if (nodata->empty() || nodata->size() > IMGSTAT_MAX_CHANNELS)
      throw nb::value_error("nodata must be one value, or one per channel");
    r.nodata = *nodata;
  }
  r.no_file_nodata = no_file_nodata;
  if (!mask.is_none())
    r.mask = c_path(mask);
  if (!labels.is_none())
    r.labels = c_path(labels);
}

bool sample_from_name(const std::string &name, imgstat_sample *out) {
  if (name == "uint8")
    *out = IMGSTAT_U8;
  else if (name == "uint16")
    *out = IMGSTAT_U16;
  else if (name == "float32")
    *out = IMGSTAT_F32;
  else
    return false;
  return true;
}

bool scale_unit(const std::string &scale) {
  if (scale == "unit")
    return true;
  if (scale != "none" && scale != "native")
    throw nb::value_error("scale must be 'native' (or 'none', its synonym) "
                          "or 'unit'");
  return false;
}

std::pair<double, double> range_of(const std::vector<double> &range) {
  if (range.size() != 2 || !(range[0] < range[1]))
    throw nb::value_error("range must be (low, high) with low < high");
  return {range[0], range[1]};
}

imgstat_dataset_as as_of(const std::string &as, bool scale_unit) {
  imgstat_dataset_as out = IMGSTAT_AS_KEEP;
  if (as.empty()) /* not given: the command line's rule */
    return imgstat_dataset_as_default(0, out, scale_unit);
  if (!imgstat_dataset_as_from_name(as.c_str(), &out))
    throw nb::value_error("as_ must be 'keep', 'gray', 'rgb' or 'rgba'");
  return out;
}

namespace {

// The command line's default limits on one image.
imgstat_load_options load_defaults() {
  imgstat_load_options lo;
  std::memset(&lo, 0, sizeof lo);
  lo.max_pixels = IMGSTAT_DEFAULT_MAX_PIXELS;
  lo.max_memory = IMGSTAT_DEFAULT_MAX_MEMORY;
  return lo;
}

} // namespace

void engine_defaults(imgstat_engine_options *o, imgstat_backend backend) {
  std::memset(o, 0, sizeof *o);
  o->backend = backend;
  o->kernel = IMGSTAT_KERNEL_FAST;
  o->load = load_defaults();
}

imgstat_engine *engine_for(imgstat_backend backend) {
  static std::mutex m;
  static std::map<int, imgstat_engine *> engines;
  std::lock_guard<std::mutex> lock(m);
  auto it = engines.find((int)backend);
  if (it != engines.end())
    return it->second;
  imgstat_engine_options o;
  engine_defaults(&o, backend);
  imgstat_engine *e = nullptr;
  imgstat_error err;
  std::memset(&err, 0, sizeof err);
  if (imgstat_engine_create(&o, &e, &err) != IMGSTAT_OK)
    throw TextError(PyExc_RuntimeError, err.message);
  engines[(int)backend] = e;
  return e;
}

Outcome stats_image(const char *name, const imgstat_image *img,
                    const Request &req) {
  imgstat_engine *e = engine_for(req.backend);
  imgstat_stats_request sr = req.stats();
  imgstat_job_result res;
  std::memset(&res, 0, sizeof res);
  imgstat_engine_stats(e, name, img, &sr, &res);
  Outcome out;
  if (res.status == IMGSTAT_OK)
    out = {true, std::make_shared<Kept>(name, &res, req), Failure()};
  else
    out = {false, nullptr, failure_of(name, &res)};
  imgstat_job_result_free(&res);
  return out;
}

namespace {

nb::tuple stats_path(nb::handle path, int ddof, bool histogram,
                     std::optional<std::vector<double>> percentiles,
                     const std::string &backend,
                     std::optional<std::vector<double>> nodata,
                     bool no_file_nodata, nb::handle mask, nb::handle labels) {
  std::string file = c_path(path);
  Request req = make_request(ddof, histogram, percentiles, backend);
  set_valid(req, nodata, no_file_nodata, mask, labels);
  Outcome r;
  {
    nb::gil_scoped_release nogil;
    r = stats_image(file.c_str(), nullptr, req);
  }
  return result_tuple(r);
}

nb::tuple stats_bytes(nb::bytes data, int ddof, bool histogram,
                      std::optional<std::vector<double>> percentiles,
                      const std::string &backend,
                      std::optional<std::vector<double>> nodata,
                      bool no_file_nodata, nb::handle mask, nb::handle labels) {
  Request req = make_request(ddof, histogram, percentiles, backend);
  set_valid(req, nodata, no_file_nodata, mask, labels);
  Outcome r;
  const void *p = data.c_str();
  size_t n = data.size();
  {
    nb::gil_scoped_release nogil;
    imgstat_load_options lo = load_defaults();
    imgstat_image img;
    std::memset(&img, 0, sizeof img);
    imgstat_error err;
    std::memset(&err, 0, sizeof err);
    imgstat_status s = imgstat_image_load_memory(p, n, &lo, &img, &err);
    if (s != IMGSTAT_OK)
      r = {false, nullptr, failure_from("<bytes>", s, err)};
    else
      r = stats_image("<bytes>", &img, req);
    imgstat_image_free(&img);
  }
  return result_tuple(r);
}

} // namespace

void register_requests(nb::module_ &m) {
  m.def("stats_path", &stats_path, nb::arg("path"), nb::arg("ddof"),
        nb::arg("histogram"), nb::arg("percentiles").none(), nb::arg("backend"),
        nb::arg("nodata").none() = nb::none(),
        nb::arg("no_file_nodata") = false, nb::arg("mask").none() = nb::none(),
        nb::arg("labels").none() = nb::none());
  m.def("stats_bytes", &stats_bytes, nb::arg("data"), nb::arg("ddof"),
        nb::arg("histogram"), nb::arg("percentiles").none(), nb::arg("backend"),
        nb::arg("nodata").none() = nb::none(),
        nb::arg("no_file_nodata") = false, nb::arg("mask").none() = nb::none(),
        nb::arg("labels").none() = nb::none());
}

} // namespace binding
