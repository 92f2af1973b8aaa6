// Runs over files and folders (imgstat_run.h): the arguments of scan,
// dataset and normalize_files, and Scan, a run on a thread of its own whose
// records and failures wait in a bounded queue for the Python iterator.
#include "binding.h"

#include <chrono>

namespace binding {

RunArgs make_run_args(const std::vector<std::string> &inputs,
                      const std::vector<std::string> &lists, int jobs,
                      bool follow, Request req,
                      const std::string &jpeg_decoder) {
  if (!imgstat_jpeg_decoder_from_name(jpeg_decoder.c_str(), &req.jpeg))
    throw nb::value_error("jpeg_decoder must be 'auto', 'cpu' or 'gpu'");
  if (req.jpeg == IMGSTAT_JPEG_DECODER_GPU &&
      req.backend == IMGSTAT_BACKEND_CPU)
    throw nb::value_error("jpeg_decoder='gpu' cannot be used with "
                          "backend='cpu'");
  RunArgs a;
  for (const auto &p : inputs) {
    if (p == "-")
      throw nb::value_error("'-' (standard input) is not an input here");
    a.paths.push_back(p);
    a.is_list.push_back(0);
  }
  for (const auto &l : lists) {
    a.paths.push_back(l);
    a.is_list.push_back(1);
  }
  if (a.paths.empty())
    throw nb::value_error("no inputs");
  if (jobs < 0)
    throw nb::value_error("jobs must be 0 (one per core) or more");
  a.jobs = jobs;
  a.follow = follow;
  a.req = req;
  return a;
}

std::vector<imgstat_run_source> run_sources(const RunArgs &a) {
  std::vector<imgstat_run_source> sources(a.paths.size());
  for (size_t k = 0; k < sources.size(); k++) {
    sources[k].is_list = a.is_list[k];
    sources[k].text = a.paths[k].c_str();
  }
  return sources;
}

Scan::Scan(RunArgs args) : args_(std::move(args)) {
  thread_ = std::thread([this] { run(); });
}

Scan::~Scan() { close(); }

nb::object Scan::next() {
  for (;;) {
    std::optional<Item> got;
    bool finished = false;
    {
      nb::gil_scoped_release nogil;
      std::unique_lock<std::mutex> lock(m_);
      cv_.wait_for(lock, std::chrono::milliseconds(50),
                   [this] { return !queue_.empty() || done_; });
      if (!queue_.empty()) {
        got = std::move(queue_.front());
        queue_.pop_front();
        cv_.notify_all();
      } else if (done_) {
        finished = true;
      }
    }
    if (got) {
      if (got->ok)
        return nb::make_tuple(true, emitted_dict(*got->record));
      return nb::make_tuple(false, failure_tuple(got->f));
    }
    if (finished) {
      join();
      if (!error_.empty())
        throw TextError(PyExc_RuntimeError, error_);
      return nb::none();
    }
    if (PyErr_CheckSignals() != 0) {
      close();
      throw nb::python_error();
    }
  }
}

void Scan::close() {
  cancel_ = 1;
  {
    std::lock_guard<std::mutex> lock(m_);
    queue_.clear();
  }
  cv_.notify_all();
  nb::gil_scoped_release nogil;
  join();
}

nb::tuple Scan::progress() {
  std::lock_guard<std::mutex> lock(m_);
  return nb::make_tuple(progress_.done, progress_.failed, progress_.total,
                        (bool)progress_.total_known);
}

void Scan::join() {
  std::lock_guard<std::mutex> lock(join_m_);
  if (thread_.joinable())
    thread_.join();
}

int Scan::on_item(void *ctx, const imgstat_run_item *it,
                  const imgstat_run_progress *p) {
  Scan *s = (Scan *)ctx;
  {
    std::lock_guard<std::mutex> lock(s->m_);
    s->progress_ = *p;
  }
  if (s->report_) { // every input's outcome, as the command line adds them
    imgstat_error err;
    std::memset(&err, 0, sizeof err);
    if (imgstat_report_add(s->report_, it->input->index, it->input->path,
                           it->result, s->args_.req.ddof, &err) != IMGSTAT_OK) {
      s->report_error_ = err.message;
      s->report_exc_ = PyExc_MemoryError;
      return 1; // stops the run
    }
  }
  Item item;
  item.ok = it->result->status == IMGSTAT_OK;
  if (s->args_.dataset && item.ok) /* the dataset wants its failures */
    return s->cancel_ != 0;
  if (item.ok)
    item.record = emitted_of(it->input->path, it->result, s->args_.req);
  else
    item.f = failure_of(it->input->path, it->result);
  std::unique_lock<std::mutex> lock(s->m_);
  s->cv_.wait(lock, [s] { return s->queue_.size() < 256 || s->cancel_; });
  if (s->cancel_)
    return 1;
  s->queue_.push_back(std::move(item));
  s->cv_.notify_all();
  return 0;
}

void Scan::run() {
  std::vector<imgstat_run_source> sources = run_sources(args_);
  imgstat_run_options o;
  std::memset(&o, 0, sizeof o);
  o.sources = sources.data();
  o.nsources = (int)sources.size();
  o.follow = args_.follow;
  o.jobs = args_.jobs;
  engine_defaults(&o.engine, args_.req.backend);
  o.engine.jpeg_decoder = args_.req.jpeg;
  o.request = args_.req.stats();
  /* masks and labels: the run pairs each input with its own */
  o.request.mask_path = nullptr;
  o.request.labels_path = nullptr;
  const Request &q = args_.req;
  o.mask = q.mask.empty() ? nullptr : q.mask.c_str();
  o.labels = q.labels.empty() ? nullptr : q.labels.c_str();
  o.mask_suffix = q.mask_suffix.empty() ? nullptr : q.mask_suffix.c_str();
  o.dataset = args_.dataset;
  o.ds = args_.ds;
  o.sample = args_.sample;
  o.seed = args_.seed;
  o.cancel = &cancel_;
  if (!args_.report_path.empty()) {
    // the page's pooled histograms, and the whole list to check the page
    // against, as --report asks for them
    o.request.histograms = 1;
    o.whole_list = 1;
    started_ = std::chrono::duration<double>(
                   std::chrono::system_clock::now().time_since_epoch())
                   .count();
  }
  imgstat_error err;
  std::memset(&err, 0, sizeof err);
  imgstat_run *run = nullptr;
  imgstat_status s = imgstat_run_create(&o, &run, &err);
  if (s == IMGSTAT_OK && !args_.report_path.empty() && !start_report(run, o)) {
    imgstat_run_destroy(run);
    std::lock_guard<std::mutex> lock(m_);
    done_ = true;
    cv_.notify_all();
    return;
  }
  if (s == IMGSTAT_OK) {
    imgstat_run_callbacks cb;
    std::memset(&cb, 0, sizeof cb);
    cb.ctx = this;
    cb.item = on_item;
    imgstat_run_report rep;
    s = imgstat_run_execute(run, &cb, &rep, &err);
    if (s == IMGSTAT_OK && rep.dataset_ok && !rep.cancelled)
      finish_dataset(run);
  }
  imgstat_run_destroy(run);
  imgstat_report_destroy(report_);
  report_ = nullptr;
  std::lock_guard<std::mutex> lock(m_);
  if (s != IMGSTAT_OK)
    error_ = err.message[0] ? err.message : "out of memory";
  done_ = true;
  cv_.notify_all();
}

namespace {

Scan *make_scan(nb::handle inputs, nb::handle lists, int jobs, bool follow,
                int ddof, bool histogram,
                std::optional<std::vector<double>> percentiles,
                const std::string &backend, const std::string &jpeg_decoder,
                std::optional<std::vector<double>> nodata, bool no_file_nodata,
                nb::handle mask, nb::handle labels,
                std::optional<std::string> mask_suffix) {
  Request req = make_request(ddof, histogram, percentiles, backend);
  set_valid(req, nodata, no_file_nodata, mask, labels, mask_suffix);
  return new Scan(make_run_args(c_paths(inputs), c_paths(lists), jobs, follow,
                                req, jpeg_decoder));
}

} // namespace

void register_runs(nb::module_ &m) {
  nb::class_<Scan>(m, "Scan")
      .def("next", &Scan::next)
      .def("close", &Scan::close)
      .def("progress", &Scan::progress);
  m.def("scan", &make_scan, nb::arg("inputs"), nb::arg("lists"),
        nb::arg("jobs"), nb::arg("follow"), nb::arg("ddof"),
        nb::arg("histogram"), nb::arg("percentiles").none(), nb::arg("backend"),
        nb::arg("jpeg_decoder"), nb::arg("nodata").none() = nb::none(),
        nb::arg("no_file_nodata") = false, nb::arg("mask").none() = nb::none(),
        nb::arg("labels").none() = nb::none(),
        nb::arg("mask_suffix").none() = nb::none(),
        nb::rv_policy::take_ownership);
}

} // namespace binding
