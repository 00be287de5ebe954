#include "admin/logging.h"

#include <spdlog/formatter.h>
#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <cstdio>

#include "common/text.h"

namespace rdmastor::admin {

using text::JsonEscape;

namespace {

std::atomic<bool> g_request_log{false};
std::atomic<bool> g_json{false};

// A message starting with this byte carries pre-rendered JSON fields (`"k":v,...`) that the JSON
// formatter inlines; the text formatter never sees one.
constexpr char kFieldsMarker = '\x1e';

// {"time":"...","level":"info","msg":"..."} per line.
class JsonFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    auto secs = std::chrono::system_clock::to_time_t(msg.time);
    auto ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(msg.time.time_since_epoch()).count() %
        1000;
    std::tm tm{};
    gmtime_r(&secs, &tm);
    char ts[80];
    std::snprintf(ts, sizeof(ts), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                  tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                  static_cast<int>(ms));
    std::string_view text(msg.payload.data(), msg.payload.size());
    auto level = spdlog::level::to_string_view(msg.level);
    std::string line = std::string("{\"time\":\"") + ts + "\",\"level\":\"" +
                       std::string(level.data(), level.size()) + "\",";
    if (!text.empty() && text[0] == kFieldsMarker) {
      line += text.substr(1);
    } else {
      line += "\"msg\":\"" + JsonEscape(text) + "\"";
    }
    line += "}\n";
    dest.append(line.data(), line.data() + line.size());
  }
  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<JsonFormatter>();
  }
};

bool IsSecretParam(std::string_view name) {
  std::string n = text::ToLower(name);
  return n == "x-amz-signature" || n == "x-amz-credential" || n == "x-amz-security-token" ||
         n == "signature" || n == "awsaccesskeyid";
}

}  // namespace

std::string RedactTarget(std::string_view target) {
  auto q = target.find('?');
  if (q == std::string_view::npos) return std::string(target);
  std::string out(target.substr(0, q + 1));
  std::string_view query = target.substr(q + 1);
  bool first = true;
  while (true) {
    auto amp = query.find('&');
    std::string_view item = query.substr(0, amp);
    auto eq = item.find('=');
    if (!first) out += '&';
    first = false;
    if (eq != std::string_view::npos && IsSecretParam(item.substr(0, eq))) {
      out.append(item.substr(0, eq + 1));
      out += "REDACTED";
    } else {
      out.append(item);
    }
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  return out;
}

Status ConfigureLogging(const std::map<std::string, std::string>& env) {
  auto get = [&](const char* name) -> std::string {
    auto it = env.find(name);
    return it == env.end() ? std::string() : it->second;
  };
  auto level = spdlog::level::info;
  if (auto v = get("RDMASTOR_LOG_LEVEL"); !v.empty()) {
    level = spdlog::level::from_str(text::ToLower(v));
    if (level == spdlog::level::off && text::ToLower(v) != "off")
      return MakeError(
          ErrorCode::kInvalidArgument,
          "RDMASTOR_LOG_LEVEL=" + v + " is not one of trace|debug|info|warn|error|off");
  }
  std::string format = text::ToLower(get("RDMASTOR_LOG_FORMAT"));
  if (!format.empty() && format != "text" && format != "json")
    return MakeError(
        ErrorCode::kInvalidArgument,
        "RDMASTOR_LOG_FORMAT=" + get("RDMASTOR_LOG_FORMAT") + " is invalid: use text or json");
  std::string requests = text::ToLower(get("RDMASTOR_LOG_REQUESTS"));
  if (!requests.empty() && requests != "on" && requests != "off")
    return MakeError(
        ErrorCode::kInvalidArgument,
        "RDMASTOR_LOG_REQUESTS=" + get("RDMASTOR_LOG_REQUESTS") + " is invalid: use on or off");

  auto logger = spdlog::get("rdmastor");
  if (!logger) logger = spdlog::stderr_color_mt("rdmastor");
  spdlog::set_default_logger(logger);
  g_json = format == "json";
  if (g_json) {
    spdlog::set_formatter(std::make_unique<JsonFormatter>());
  } else {
    spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e%z %^%l%$ %v");
  }
  spdlog::set_level(level);
  g_request_log = requests == "on";
  return {};
}

bool RequestLogEnabled() { return g_request_log.load(std::memory_order_relaxed); }

void LogRequest(const RequestLogEntry& e) {
  auto level = RequestLogEnabled() ? spdlog::level::info : spdlog::level::debug;
  if (!spdlog::should_log(level)) return;
  std::string path = RedactTarget(e.target);
  std::string_view api = e.api.empty() ? "-" : e.api;
  if (g_json) {
    spdlog::log(level,
                "{}\"msg\":\"request\",\"request_id\":\"{}\",\"remote\":\"{}\",\"method\":\"{}\","
                "\"path\":\"{}\",\"api\":\"{}\",\"status\":{},\"bytes_in\":{},\"bytes_out\":{},"
                "\"duration_us\":{}",
                kFieldsMarker, JsonEscape(e.request_id), JsonEscape(e.remote_ip),
                JsonEscape(e.method), JsonEscape(path), JsonEscape(api), e.status, e.bytes_in,
                e.bytes_out, e.duration_us);
    return;
  }
  spdlog::log(level, "request {} {} {} {} api={} status={} in={} out={} {}us", e.request_id,
              e.remote_ip, e.method, path, api, e.status, e.bytes_in, e.bytes_out, e.duration_us);
}

}  // namespace rdmastor::admin
