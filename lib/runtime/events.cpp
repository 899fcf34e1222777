#include "runtime/events.hpp"

#include "core/log.hpp"
#include "core/strings.hpp"

#include <fmt/format.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

namespace spotshift::runtime {

namespace {

const log::Logger logger("events");

void write_ref(rapidjson::Writer<rapidjson::StringBuffer>& w, const ObjectReference& r) {
  w.StartObject();
  auto field = [&](const char* k, const std::string& v) {
    if (v.empty()) return;
    w.Key(k);
    w.String(v);
  };
  field("apiVersion", r.api_version);
  field("kind", r.kind);
  field("namespace", r.namespace_);
  field("name", r.name);
  field("uid", r.uid);
  field("resourceVersion", r.resource_version);
  w.EndObject();
}

}  // namespace

EventRecorder::EventRecorder(std::shared_ptr<kube::Client> client, Timers& timers, EventRecorderOptions options)
    : client_(std::move(client)), timers_(timers), options_(std::move(options)), wake_(timers.executor()) {}

std::string EventRecorder::series_key(const Pending& p, const EventRecorderOptions& o) {
  auto ref = [](const ObjectReference& r) { return fmt::format("{}/{}/{}/{}/{}", r.api_version, r.kind, r.namespace_, r.name, r.uid); };
  return fmt::format("{}|{}|{}|{}|{}|{}|{}", p.type, p.action, p.reason, o.reporting_controller, o.reporting_instance, ref(p.regarding),
                     p.related ? ref(*p.related) : "");
}

std::string_view to_string(EventType t) { return t == EventType::kWarning ? "Warning" : "Normal"; }

void EventRecorder::record(const ObjectReference& regarding, const EventReason& why, std::string note,
                           const std::optional<ObjectReference>& related) {
  const std::string_view type = to_string(why.type), reason = why.reason, action = why.action;
  ++stats_.recorded;
  Time now = timers_.now();
  // Spam filter: a token bucket per object and type.
  std::string spam_key = fmt::format("{}/{}/{}|{}", regarding.kind, regarding.namespace_, regarding.name, type);
  auto [it, fresh] = spam_.try_emplace(spam_key, Bucket{static_cast<double>(options_.spam_burst), now});
  Bucket& b = it->second;
  double refill = std::chrono::duration<double>(now - b.last) / std::chrono::duration<double>(options_.spam_refill);
  b.tokens = std::min<double>(options_.spam_burst, b.tokens + refill);
  b.last = now;
  if (b.tokens < 1.0) {
    ++stats_.dropped_spam;
    logger.debug(1, "dropping an event: too many about one object", {{"object", spam_key}, {"reason", reason}});
    return;
  }
  b.tokens -= 1.0;
  if (queue_.size() >= options_.queue_size) {
    ++stats_.dropped_full;
    logger.warn("dropping an event: the queue is full", {{"reason", reason}});
    return;
  }
  note.resize(utf8_prefix(note, 1024).size());  // the API server refuses a longer note (counted in bytes)
  queue_.push_back(Pending{regarding, related, std::string(type), std::string(reason), std::string(action), std::move(note), now});
  wake_.notify();
}

void EventRecorder::stop() {
  stopped_ = true;
  wake_.notify();
}

asio::awaitable<void> EventRecorder::send(const Pending& p) {
  std::string key = series_key(p, options_);
  auto it = series_.find(key);
  if (it != series_.end() && it->second.created && p.at - it->second.last < options_.series_idle) {
    Series& s = it->second;
    ++s.count;
    s.last = p.at;
    s.dirty = true;
    if (s.count == 2) co_await flush_series();  // the first repeat turns the event into a series at once
    co_return;
  }
  std::string ns = p.regarding.namespace_.empty() ? "default" : p.regarding.namespace_;
  auto nanos = std::chrono::duration_cast<std::chrono::nanoseconds>(p.at.time_since_epoch()).count();
  std::string name = fmt::format("{}.{:x}", p.regarding.name.empty() ? "event" : p.regarding.name, nanos);
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  w.StartObject();
  w.Key("apiVersion");
  w.String("events.k8s.io/v1");
  w.Key("kind");
  w.String("Event");
  w.Key("metadata");
  w.StartObject();
  w.Key("name");
  w.String(name);
  w.Key("namespace");
  w.String(ns);
  w.EndObject();
  w.Key("eventTime");
  w.String(format_micro_time(p.at));
  w.Key("reportingController");
  w.String(options_.reporting_controller);
  w.Key("reportingInstance");
  w.String(options_.reporting_instance);
  w.Key("action");
  w.String(p.action);
  w.Key("reason");
  w.String(p.reason);
  w.Key("regarding");
  write_ref(w, p.regarding);
  if (p.related) {
    w.Key("related");
    write_ref(w, *p.related);
  }
  w.Key("note");
  w.String(p.note);
  w.Key("type");
  w.String(p.type);
  w.EndObject();
  std::string body(buf.GetString(), buf.GetSize());
  for (int attempt = 1;; ++attempt) {
    auto r = co_await client_->create(kube::Resource::events(), ns, body);
    if (r) {
      ++stats_.created;
      series_[key] = Series{name, ns, 1, p.at, true, false};
      co_return;
    }
    if (attempt >= options_.send_attempts || !r.error().is_retryable()) {
      ++stats_.failed;
      logger.warn("could not record an event", {{"reason", p.reason}, {"error", r.error()}});
      co_return;
    }
    co_await timers_.sleep(std::chrono::seconds(1));
  }
}

asio::awaitable<void> EventRecorder::flush_series() {
  Time now = timers_.now();
  for (auto it = series_.begin(); it != series_.end();) {
    Series& s = it->second;
    if (s.dirty) {
      std::string patch = fmt::format(R"({{"series":{{"count":{},"lastObservedTime":"{}"}}}})", s.count, format_micro_time(s.last));
      auto r = co_await client_->patch(kube::Resource::events(), s.namespace_, s.name, kube::PatchType::kMerge, patch);
      if (r) ++stats_.series_updates;
      else logger.debug(1, "could not update an event series", {{"event", s.name}, {"error", r.error()}});
      s.dirty = false;
    }
    if (now - s.last >= options_.series_idle && !s.dirty) it = series_.erase(it);
    else ++it;
  }
}

asio::awaitable<void> EventRecorder::run() {
  Time next_flush = timers_.now() + options_.series_flush_interval;
  while (!stopped_) {
    while (!queue_.empty()) {
      Pending p = std::move(queue_.front());
      queue_.pop_front();
      co_await send(p);
    }
    if (timers_.now() >= next_flush) {
      co_await flush_series();
      next_flush = timers_.now() + options_.series_flush_interval;
    }
    if (stopped_) break;
    co_await timers_.sleep_until(next_flush, &wake_);
  }
  while (!queue_.empty()) {
    Pending p = std::move(queue_.front());
    queue_.pop_front();
    co_await send(p);
  }
  co_await flush_series();
}

}  // namespace spotshift::runtime
