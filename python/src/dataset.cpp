// The dataset record of a run (imgstat.dataset): its options, the record as
// a dict with its names as Python gives them, the failures among the
// inputs.
#include "binding.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>

extern "C" {
#include "imgstat/outputs.h"
}

namespace binding {

bool Scan::start_report(imgstat_run *run, const imgstat_run_options &o) {
  imgstat_error err;
  std::memset(&err, 0, sizeof err);
  // the page replaces no input (the whole list: walked before the run)
  const imgstat_input_list *list = imgstat_run_input_list(run);
  imgstat_output_guard *g = nullptr;
  if (list && imgstat_output_guard_create(list, &g, &err) != IMGSTAT_OK) {
    report_error_ = err.message;
    report_exc_ = PyExc_MemoryError;
    return false;
  }
  imgstat_status s =
      g ? imgstat_output_guard_check(g, args_.report_path.c_str(), &err)
        : IMGSTAT_OK;
  imgstat_output_guard_destroy(g);
  if (s != IMGSTAT_OK) {
    report_error_ = err.message;
    report_exc_ = PyExc_ValueError;
    return false;
  }
  imgstat_report_options rpo;
  std::memset(&rpo, 0, sizeof rpo);
  rpo.load = o.engine.load; // the outliers read again as the run read them
  if (imgstat_report_create(&rpo, &report_, &err) != IMGSTAT_OK) {
    report_error_ = err.message;
    report_exc_ = PyExc_MemoryError;
    return false;
  }
  return true;
}

void Scan::write_report(const imgstat_dataset_result *r) {
  std::vector<const char *> inputs;
  for (const auto &p : args_.paths)
    inputs.push_back(p.c_str());
  imgstat_report_run run;
  std::memset(&run, 0, sizeof run);
  run.command_line =
      args_.report_command.empty() ? nullptr : args_.report_command.c_str();
  run.backend = imgstat_backend_name(args_.req.backend);
  run.decoder = imgstat_jpeg_decoder_name(args_.req.jpeg);
  run.ninputs = (int)inputs.size();
  run.inputs = inputs.data();
  run.started = started_;
  run.seconds = std::chrono::duration<double>(
                    std::chrono::system_clock::now().time_since_epoch())
                    .count() -
                started_;
  run.emit = 0; // the command line's default: torchvision's for scale unit
  const std::vector<double> &p = args_.req.percentiles;
  run.npercentiles = (int)std::min(p.size(), (size_t)IMGSTAT_MAX_PERCENTILES);
  for (int k = 0; k < run.npercentiles; k++)
    run.percentiles[k] = p[(size_t)k];
  imgstat_error err;
  std::memset(&err, 0, sizeof err);
  if (imgstat_report_write(report_, args_.report_path.c_str(), &run, r, nullptr,
                           &err) != IMGSTAT_OK) {
    report_error_ = err.message;
    report_exc_ = PyExc_OSError;
  }
}

void Scan::finish_dataset(imgstat_run *run) {
  imgstat_dataset_result r;
  imgstat_error err;
  std::memset(&err, 0, sizeof err);
  if (imgstat_run_dataset_finish(run, args_.req.ddof, &r, &err) != IMGSTAT_OK) {
    error_ = err.message;
    return;
  }
  dataset_ok_ = dataset_json(&r, args_.req, &dataset_json_);
  if (report_)
    write_report(&r);
  for (int c = 0; c < r.channels; c++)
    ds_texts_.extrema.emplace_back(
        r.ch[c].has_values ? r.ch[c].min_at.file : "",
        r.ch[c].has_values ? r.ch[c].max_at.file : "");
  for (size_t i = 0; i < r.nexcluded; i++)
    ds_texts_.excluded.emplace_back(r.excluded[i].file, r.excluded[i].reason);
  for (size_t i = 0; i < r.noutliers; i++)
    ds_texts_.outliers.emplace_back(r.outliers[i].file, r.outliers[i].reason);
  imgstat_dataset_result_free(&r);
}

// The record's names (the extrema's files, the images left out and the
// outliers, and why) as py_text makes them, not as the text holds them
// (U+FFFD for bytes that are not UTF-8).
nb::object Scan::dataset_record() {
  if (!dataset_ok_)
    throw std::runtime_error("the run has no dataset record");
  nb::object record =
      nb::module_::import_("json").attr("loads")(py_text(dataset_json_));
  nb::dict ds = nb::cast<nb::dict>(record["dataset"]);
  nb::list stats = nb::cast<nb::list>(ds["stats"]);
  for (size_t c = 0; c < ds_texts_.extrema.size(); c++) {
    const auto &files = ds_texts_.extrema[c];
    if (files.first.empty() && files.second.empty())
      continue; // no values: nulls
    nb::dict ch = nb::cast<nb::dict>(stats[c]);
    ch["min_file"] = py_text(files.first);
    ch["max_file"] = py_text(files.second);
  }
  const char *const keys[2] = {"excluded", "outliers"};
  for (int k = 0; k < 2; k++) {
    nb::list notes = nb::cast<nb::list>(ds[keys[k]]);
    const auto &texts = k ? ds_texts_.outliers : ds_texts_.excluded;
    for (size_t i = 0; i < texts.size(); i++) {
      nb::dict note = nb::cast<nb::dict>(notes[i]);
      note["file"] = py_text(texts[i].first);
      note["reason"] = py_text(texts[i].second);
    }
  }
  return record;
}

namespace {

// The dataset record of the inputs (the command line's --dataset-only
// --json) as a dict, and the failures among them: (record, [(path, status,
// message)]).
nb::tuple dataset(nb::handle inputs, nb::handle lists, int jobs, bool follow,
                  const std::string &as, const std::string &scale,
                  double outlier_z, std::optional<std::vector<double>> range,
                  int ddof, bool histogram,
                  std::optional<std::vector<double>> percentiles,
                  const std::string &backend, const std::string &jpeg_decoder,
                  uint64_t sample, uint64_t seed,
                  std::optional<std::vector<double>> nodata,
                  bool no_file_nodata, nb::handle mask, nb::handle labels,
                  std::optional<std::string> mask_suffix, nb::handle report,
                  const std::string &report_command) {
  Request req = make_request(ddof, histogram, percentiles, backend);
  set_valid(req, nodata, no_file_nodata, mask, labels, mask_suffix);
  RunArgs a = make_run_args(c_paths(inputs), c_paths(lists), jobs, follow, req,
                            jpeg_decoder);
  a.dataset = true;
  a.sample = sample;
  a.seed = seed;
  std::memset(&a.ds, 0, sizeof a.ds);
  a.ds.scale_unit = scale_unit(scale);
  a.ds.as = as_of(as, a.ds.scale_unit);
  if (!(outlier_z > 0))
    throw nb::value_error("outlier_z must be positive");
  a.ds.outlier_z = outlier_z;
  if (!report.is_none()) { // the report page's path (--report)
    a.report_path = c_path(report);
    a.report_command = report_command;
  }
  if (range) {
    std::pair<double, double> r = range_of(*range);
    a.ds.have_range = 1;
    a.ds.lo = r.first;
    a.ds.hi = r.second;
  }
  std::unique_ptr<Scan> scan(new Scan(std::move(a)));
  nb::list failures;
  for (;;) {
    nb::object it = scan->next();
    if (it.is_none())
      break;
    nb::tuple t = nb::cast<nb::tuple>(it);
    if (!nb::cast<bool>(t[0]))
      failures.append(t[1]);
  }
  if (!scan->report_error().empty())
    throw TextError(scan->report_exception(), scan->report_error());
  return nb::make_tuple(scan->dataset_record(), failures);
}

} // namespace

void register_dataset(nb::module_ &m) {
  m.def("dataset", &dataset, nb::arg("inputs"), nb::arg("lists"),
        nb::arg("jobs"), nb::arg("follow"), nb::arg("as_"), nb::arg("scale"),
        nb::arg("outlier_z"), nb::arg("range").none(), nb::arg("ddof"),
        nb::arg("histogram"), nb::arg("percentiles").none(), nb::arg("backend"),
        nb::arg("jpeg_decoder"), nb::arg("sample"), nb::arg("seed"),
        nb::arg("nodata").none() = nb::none(),
        nb::arg("no_file_nodata") = false, nb::arg("mask").none() = nb::none(),
        nb::arg("labels").none() = nb::none(),
        nb::arg("mask_suffix").none() = nb::none(),
        nb::arg("report").none() = nb::none(), nb::arg("report_command") = "");
}

} // namespace binding
