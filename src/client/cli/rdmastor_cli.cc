// rdmastor-cli: a small S3 command line on the client library, with S3 over RDMA.
//   rdmastor-cli --endpoint URL [--rdma [--transport dc|rc]] [--http-fallback] [--json]
//                mb|ls|put|get|rm BUCKET[/KEY] [FILE]
// Credentials: AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY. Exit status 0 on success, 1 on a failed
// request, 2 on usage errors.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/cli11_support.h"
#include "rdmastor/rdma_client.h"

namespace {

using rdmastor::client::RdmaS3Client;

constexpr const char* kUsage =
    "usage: rdmastor-cli --endpoint URL [--certs-dir DIR] [--rdma] [--http-fallback] [--json] "
    "COMMAND ARGS\n"
    "  mb BUCKET              create a bucket\n"
    "  ls BUCKET[/PREFIX]     list objects (or buckets without an argument)\n"
    "  put BUCKET/KEY FILE    upload FILE\n"
    "  get BUCKET/KEY FILE    download into FILE\n"
    "  rm BUCKET[/KEY]        delete an object (or an empty bucket)\n"
    "  --rdma                 move payloads over S3 over RDMA\n"
    "  --fabric soft|verbs    with --rdma: the RDMA fabric (default soft; verbs needs the RDMA\n"
    "                         build and an mlx5 NIC, set up by MINIO_RDMA_DEVICE, _PORT,\n"
    "                         _GID_INDEX and _DC_KEY as on the server)\n"
    "  --transport dc|rc      with --rdma: dc (default) lets the server reach the client's\n"
    "                         target (DC on verbs); rc opens one persistent RC connection to\n"
    "                         the server's MINIO_RDMA_RC_PORT (for NICs without DC)\n"
    "  --rc-port N            with --transport rc: the server's RC port (default: the\n"
    "                         MINIO_RDMA_RC_PORT environment variable, else 9100)\n"
    "  --http-fallback        with --rdma: retry over HTTP when the server answers 501\n"
    "  --json                 one JSON object on standard output per command: \"status\"\n"
    "                         success or error, \"command\", and what it listed or moved\n"
    "  --max-attempts N       tries per request when the server answers 500, 502, 503 SlowDown\n"
    "                         or 504, backing off as the AWS SDKs' standard mode (1-100;\n"
    "                         default: the AWS_MAX_ATTEMPTS environment variable, else 3). A\n"
    "                         plain HTTP put streams its file and is sent once\n"
    "  --certs-dir DIR        https:// endpoints: trust DIR/CAs/*.crt|*.pem besides the system\n"
    "                         CA store (default: the CAs of ~/.rdmastor/certs, MinIO's\n"
    "                         ~/.minio/certs and mc's ~/.mc/certs)\n"
    "credentials: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY\n";

constexpr uint64_t kPart = 64ull << 20;  // RDMA transfers per token (and progress granularity)

struct Summary {
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  uint64_t bytes = 0;
  std::string transport = "http";
  double Seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  void Print(const char* what) const {
    double s = Seconds();
    std::fprintf(stderr, "%s: %llu bytes in %.3f s, %.1f MiB/s, transport %s\n", what,
                 static_cast<unsigned long long>(bytes), s,
                 s > 0 ? static_cast<double>(bytes) / 1048576.0 / s : 0.0, transport.c_str());
  }
};

// A progress line on a terminal (stderr) for transfers of 16 MiB or more, redrawn at most every
// 100 ms and once at 100%.
class Progress {
 public:
  explicit Progress(uint64_t total)
      : total_(total), on_(isatty(STDERR_FILENO) && total >= (16ull << 20)) {}
  bool on() const { return on_; }
  void Update(uint64_t done) {
    if (!on_ || finished_) return;
    auto now = std::chrono::steady_clock::now();
    if (done < total_ && now - last_ < std::chrono::milliseconds(100)) return;
    last_ = now;
    double s = std::chrono::duration<double>(now - start_).count();
    std::fprintf(stderr, "\r%6.1f%% %llu/%llu MiB  %.1f MiB/s ",
                 100.0 * static_cast<double>(done) / static_cast<double>(total_),
                 static_cast<unsigned long long>(done >> 20),
                 static_cast<unsigned long long>(total_ >> 20),
                 s > 0 ? static_cast<double>(done) / 1048576.0 / s : 0.0);
    if (done >= total_) {
      std::fputc('\n', stderr);
      finished_ = true;
    }
  }
  // Ends an unfinished line (a failure) so the error message starts on its own line.
  ~Progress() {
    if (on_ && !finished_ && last_ != std::chrono::steady_clock::time_point{})
      std::fputc('\n', stderr);
  }

 private:
  uint64_t total_;
  bool on_, finished_ = false;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now(), last_{};
};

// --json: the command's one JSON object on stdout ({"status": "success"|"error", "command", ...},
// as `rdmastor admin --json`); messages still go to stderr.
bool g_json = false;
std::string g_command;

void PrintJson(const std::string& status, nlohmann::json fields) {
  nlohmann::json out = {{"status", status}, {"command", g_command}};
  out.update(fields);
  std::printf("%s\n", out.dump().c_str());
}

int Fail(const std::string& msg) {
  if (g_json) PrintJson("error", {{"error", msg}});
  std::fprintf(stderr, "rdmastor-cli: %s\n", msg.c_str());
  return 1;
}

// The usage line of what was wrong (a command such as "put", a flag such as "--fabric", with the
// lines its description goes on over); the first line of the whole text for "".
std::string UsageLine(std::string_view what) {
  const std::string_view text(kUsage);
  std::string line = std::string(text.substr(0, text.find('\n')));
  if (what.empty()) return line;
  const std::string want = "  " + std::string(what) + " ";
  for (size_t at = 0; at < text.size();) {
    const size_t end = std::min(text.find('\n', at), text.size());
    const std::string_view l = text.substr(at, end - at);
    if (l.starts_with(want)) {
      line = "usage: rdmastor-cli --endpoint URL [OPTIONS] " + std::string(l.substr(2));
      // A flag's description may go on over the next lines (indented further).
      for (at = end + 1; at < text.size();) {
        const size_t e = std::min(text.find('\n', at), text.size());
        const std::string_view more = text.substr(at, e - at);
        if (!more.starts_with("    ")) break;
        line += "\n" + std::string(more);
        at = e + 1;
      }
      break;
    }
    at = end + 1;
  }
  return line;
}

// A usage error: why, and only the usage line of what was wrong; the whole text is --help's.
int Usage(const std::string& why, std::string_view what) {
  if (!why.empty()) std::fprintf(stderr, "rdmastor-cli: %s\n", why.c_str());
  std::fprintf(stderr, "%s\n(rdmastor-cli --help for every command and option)\n",
               UsageLine(what).c_str());
  return 2;
}

// Maps a whole file for reading (PUT) or creates one of `size` bytes for writing (GET).
struct Mapped {
  int fd = -1;
  char* p = nullptr;
  size_t size = 0;
  ~Mapped() {
    if (p && size) munmap(p, size);
    if (fd >= 0) close(fd);
  }
};

}  // namespace

int main(int argc, char** argv) {
  std::string endpoint;
  bool use_rdma = false, fallback = false;
  std::string fabric = "soft";
  std::string transport = "dc";
  std::string rc_port;
  std::string certs_dir;
  std::string max_attempts;
  // The command line (CLI11): flags before or after the command; the command's arguments.
  CLI::App app{"", "rdmastor-cli"};
  app.formatter(std::make_shared<rdmastor::cli11::UsageFirstFormatter>([](const CLI::App* a) {
    return UsageLine(a->get_parent() ? a->get_name() : "") + "\n";
  }));
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.fallthrough();       // `ls BUCKET --json`: the command passes the flags on
  app.require_subcommand(0, 1);  // a bucket named "get" after `rm` is a bucket
  app.add_option("--endpoint", endpoint);
  app.add_option("--certs-dir", certs_dir);
  app.add_flag("--rdma", use_rdma);
  app.add_option("--fabric", fabric);
  app.add_option("--transport", transport);
  app.add_option("--rc-port", rc_port);
  app.add_flag("--http-fallback", fallback);
  app.add_flag("--json", g_json);
  app.add_option("--max-attempts", max_attempts);
  // The commands and their arguments (what each does is in kUsage, their help's first line).
  struct Command {
    const char* name;
    std::vector<const char*> args;
    bool required;
  };
  for (const auto& [name, positionals, required] :
       std::initializer_list<Command>{{"mb", {"BUCKET"}, true},
                                      {"ls", {"BUCKET[/PREFIX]"}, false},
                                      {"put", {"BUCKET/KEY", "FILE"}, true},
                                      {"get", {"BUCKET/KEY", "FILE"}, true},
                                      {"rm", {"BUCKET[/KEY]"}, true}}) {
    auto* cmd = app.add_subcommand(name);
    cmd->footer("(rdmastor-cli --help: the flags, given before or after the command)");
    for (const char* p : positionals) cmd->add_option(p)->required(required);
  }
  std::vector<std::string> args;  // the command and its arguments
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    const CLI::App* at = rdmastor::cli11::Deepest(&app);
    std::fputs(at == &app ? kUsage : at->help().c_str(), stdout);
    return 0;
  } catch (const CLI::ParseError& e) {
    const CLI::App* at = rdmastor::cli11::Deepest(&app);
    std::string why = rdmastor::cli11::Explain(e, at);
    // The command's line; for a flag without its value that flag's ("--fabric needs a value"),
    // for an unknown flag the general one.
    std::string what = at == &app ? "" : at->get_name();
    if (why.starts_with("--") && why.ends_with(" needs a value")) what = why.substr(0, why.find(' '));
    if (why.starts_with("unknown argument '-")) what.clear();
    return Usage(why, what);
  }
  if (const CLI::App* at = rdmastor::cli11::Deepest(&app); at != &app) {
    args.push_back(at->get_name());
    for (const CLI::Option* o : at->get_options())
      if (o->get_positional())
        for (const auto& v : o->results()) args.push_back(v);
  }
  if (endpoint.empty()) return Usage("--endpoint URL is required", args.empty() ? "" : args[0]);
  if (args.empty()) return Usage("no command", "");
  if (fabric != "soft" && fabric != "verbs") return Usage("--fabric takes soft or verbs", "--fabric");
  if (transport != "dc" && transport != "rc")
    return Usage("--transport takes dc or rc", "--transport");
  if (rc_port.empty())
    if (const char* v = std::getenv("MINIO_RDMA_RC_PORT")) rc_port = v;
  uint16_t rc_port_number = 9100;
  if (!rc_port.empty()) {
    char* end = nullptr;
    unsigned long n = std::strtoul(rc_port.c_str(), &end, 10);
    if (*end || n == 0 || n > 65535)
      return Usage("--rc-port / MINIO_RDMA_RC_PORT takes 1-65535", "--rc-port");
    rc_port_number = static_cast<uint16_t>(n);
  }
  if (max_attempts.empty())
    if (const char* v = std::getenv("AWS_MAX_ATTEMPTS")) max_attempts = v;
  int attempts = 3;
  if (!max_attempts.empty()) {
    char* end = nullptr;
    long n = std::strtol(max_attempts.c_str(), &end, 10);
    if (*end || n < 1 || n > 100)
      return Usage("--max-attempts / AWS_MAX_ATTEMPTS takes 1-100", "--max-attempts");
    attempts = static_cast<int>(n);
  }
  if (fallback && !use_rdma)
    return Usage("--http-fallback only applies with --rdma", "--http-fallback");
  g_command = args[0];
  const char* ak = std::getenv("AWS_ACCESS_KEY_ID");
  const char* sk = std::getenv("AWS_SECRET_ACCESS_KEY");
  if (!ak || !sk) {
    if (g_json) PrintJson("error", {{"error", "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"}});
    std::fprintf(stderr, "rdmastor-cli: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY\n");
    return 2;
  }
  rdmastor::client::RdmaClientConfig cfg;
  const char* home = std::getenv("HOME");
  auto s3cfg = rdmastor::client::S3ConfigFromEndpoint(
      endpoint, ak, sk, "us-east-1", rdmastor::client::CertsDirTrust(certs_dir, home ? home : ""));
  if (!s3cfg.ok()) return Fail(s3cfg.error().message);
  cfg.s3 = *s3cfg;
  cfg.s3.max_attempts = attempts;
  cfg.allow_http_fallback = fallback;
  if (transport == "rc") cfg.transport = rdmastor::client::RdmaTransport::kRc;
  cfg.rc_port = rc_port_number;
  if (fabric == "verbs") {
    // The verbs knobs mean what they mean on the server; validated the same way.
    std::map<std::string, std::string> env;
    for (const char* name :
         {"MINIO_RDMA_DEVICE", "MINIO_RDMA_PORT", "MINIO_RDMA_GID_INDEX", "MINIO_RDMA_DC_KEY",
          "MINIO_RDMA_TRAFFIC_CLASS", "MINIO_RDMA_SERVICE_LEVEL", "MINIO_RDMA_PKEY_INDEX"})
      if (const char* v = std::getenv(name)) env[name] = v;
    auto vs = rdmastor::client::VerbsClientSettingsFromEnv(env);
    if (!vs.ok()) return Fail(vs.error().message);
    cfg.fabric = rdmastor::client::ClientFabric::kVerbs;
    cfg.verbs = *vs;
  }
  std::unique_ptr<RdmaS3Client> rc;
  std::unique_ptr<rdmastor::client::S3Client> plain;
  if (use_rdma) {
    auto c = RdmaS3Client::Create(cfg);
    if (!c.ok()) return Fail(c.error().message);
    rc = std::move(c).value();
  } else {
    plain = std::make_unique<rdmastor::client::S3Client>(cfg.s3);
  }
  auto& s3 = rc ? rc->http() : *plain;

  const std::string cmd = args[0];
  std::string target = args.size() > 1 ? args[1] : "";
  auto slash = target.find('/');
  std::string bucket = target.substr(0, slash);
  std::string key = slash == std::string::npos ? "" : target.substr(slash + 1);
  auto need = [&](bool with_key, size_t nargs) {
    return args.size() == nargs && !bucket.empty() && (!with_key || !key.empty());
  };

  auto wrong_args = [&] { return Usage("wrong arguments for " + cmd, cmd); };
  if (cmd == "mb") {
    if (!need(false, 2)) return wrong_args();
    auto st = s3.CreateBucket(bucket);
    if (!st.ok()) return Fail(st.error().message);
    if (g_json) PrintJson("success", {{"bucket", bucket}});
    return 0;
  }
  if (cmd == "rm") {
    if (!need(false, 2)) return wrong_args();
    auto st = key.empty() ? s3.DeleteBucket(bucket) : s3.DeleteObject(bucket, key);
    if (!st.ok()) return Fail(st.error().message);
    if (g_json) PrintJson("success", {{"bucket", bucket}, {"key", key}});
    return 0;
  }
  if (cmd == "ls") {
    if (args.size() > 2) return wrong_args();
    if (bucket.empty()) {
      auto buckets = s3.ListBuckets();
      if (!buckets.ok()) return Fail(buckets.error().message);
      nlohmann::json list = nlohmann::json::array();
      for (const auto& b : *buckets) {
        if (g_json)
          list.push_back({{"name", b.name}, {"creationDate", b.creation_date}});
        else
          std::printf("%s\n", b.name.c_str());
      }
      if (g_json) PrintJson("success", {{"buckets", std::move(list)}});
      return 0;
    }
    // Every page: the server answers at most 1,000 keys a request.
    rdmastor::client::ListObjectsOptions lo;
    lo.prefix = key;
    nlohmann::json objects = nlohmann::json::array();
    do {
      auto page = s3.ListObjectsV2(bucket, lo);
      if (!page.ok()) return Fail(page.error().message);
      for (const auto& o : page->objects) {
        if (g_json)
          objects.push_back({{"key", o.key},
                             {"size", o.size},
                             {"etag", o.etag},
                             {"lastModified", o.last_modified},
                             {"storageClass", o.storage_class}});
        else
          std::printf("%s\n", o.key.c_str());
      }
      if (!page->next_continuation_token.empty() &&
          page->next_continuation_token == lo.continuation_token)
        return Fail("ls: the server repeated its continuation token");
      lo.continuation_token = page->next_continuation_token;
    } while (!lo.continuation_token.empty());
    if (g_json)
      PrintJson("success", {{"bucket", bucket}, {"prefix", key}, {"objects", std::move(objects)}});
    return 0;
  }
  if (cmd == "put") {
    if (!need(true, 3)) return wrong_args();
    Mapped f;
    f.fd = open(args[2].c_str(), O_RDONLY | O_CLOEXEC);
    struct stat st {};
    if (f.fd < 0 || fstat(f.fd, &st) != 0)
      return Fail("cannot open " + args[2] + ": " + std::strerror(errno));
    f.size = static_cast<size_t>(st.st_size);
    if (f.size) {
      void* p = mmap(nullptr, f.size, PROT_READ, MAP_PRIVATE, f.fd, 0);
      if (p == MAP_FAILED) return Fail("cannot map " + args[2]);
      f.p = static_cast<char*>(p);
    }
    Summary sum;
    Progress progress(f.size);
    static char empty = 0;
    char* data = f.p ? f.p : &empty;
    if (rc && f.size > kPart) {
      // Larger than one transfer: multipart, each part its own token.
      auto id = rc->CreateMultipartUpload(bucket, key);
      if (!id.ok()) return Fail(id.error().message);
      std::vector<std::pair<int, std::string>> parts;
      for (uint64_t off = 0; off < f.size; off += kPart) {
        size_t n = static_cast<size_t>(std::min<uint64_t>(kPart, f.size - off));
        auto r =
            rc->UploadPart(bucket, key, *id, static_cast<int>(parts.size() + 1), data + off, n);
        if (!r.ok()) return Fail(r.error().message);
        parts.emplace_back(static_cast<int>(parts.size() + 1), r->etag);
        sum.transport = std::string(rdmastor::client::TransportName(r->transport));
        sum.bytes += n;
        progress.Update(sum.bytes);
      }
      auto done = rc->CompleteMultipartUpload(bucket, key, *id, parts);
      if (!done.ok()) return Fail(done.error().message);
    } else if (rc) {
      auto r = rc->Put(bucket, key, data, f.size);
      if (!r.ok()) return Fail(r.error().message);
      sum.transport = std::string(rdmastor::client::TransportName(r->transport));
      sum.bytes = f.size;
    } else {
      // Streamed from the mapping in 1 MiB pieces so the progress line moves.
      uint64_t sent = 0;
      auto pull = [&]() -> rdmastor::Result<std::string_view> {
        progress.Update(sent);
        size_t n = static_cast<size_t>(std::min<uint64_t>(1u << 20, f.size - sent));
        std::string_view piece(data + sent, n);
        sent += n;
        return piece;
      };
      auto r = s3.PutObject(bucket, key, f.size, pull);
      if (!r.ok()) return Fail(r.error().message);
      sum.bytes = f.size;
    }
    progress.Update(f.size);
    sum.Print("put");
    if (g_json)
      PrintJson("success", {{"bucket", bucket}, {"key", key}, {"file", args[2]}, {"bytes", sum.bytes},
                            {"seconds", sum.Seconds()}, {"transport", sum.transport},
                            {"retries", s3.retries()}});
    return 0;
  }
  if (cmd == "get") {
    if (!need(true, 3)) return wrong_args();
    rdmastor::client::S3Request head;
    head.method = "HEAD";
    head.bucket = bucket;
    head.key = key;
    auto h = s3.Execute(head, rdmastor::client::ResponseTarget::Discard());
    if (!h.ok()) return Fail(h.error().message);
    if (!h->success()) return Fail("GET " + target + ": HTTP " + std::to_string(h->status));
    uint64_t size = h->content_length.value_or(0);
    Mapped f;
    f.fd = open(args[2].c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (f.fd < 0) return Fail("cannot create " + args[2] + ": " + std::strerror(errno));
    if (ftruncate(f.fd, static_cast<off_t>(size)) != 0) return Fail("cannot size " + args[2]);
    // Over RDMA the server writes into registered memory: never a shared mapping of the file
    // (the kernel refuses long-term writable pins of those, rdma/mapping.h). Parts land in one
    // anonymous staging buffer, registered once, and are written to the file from there.
    Mapped staging;
    if (rc && size) {
      staging.size = static_cast<size_t>(std::min<uint64_t>(kPart, size));
      void* p =
          mmap(nullptr, staging.size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED)
        return Fail("cannot allocate a receive buffer: " + std::string(std::strerror(errno)));
      madvise(p, staging.size, MADV_HUGEPAGE);  // fewer pages to pin; a hint only
      staging.p = static_cast<char*>(p);
    }
    f.size = rc ? 0 : size;
    if (size && !rc) {
      void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, f.fd, 0);
      if (p == MAP_FAILED) return Fail("cannot map " + args[2]);
      f.p = static_cast<char*>(p);
    }
    // A failed download leaves no partial file behind.
    struct RemoveUnlessKept {
      std::string path;
      bool keep = false;
      ~RemoveUnlessKept() {
        if (!keep) unlink(path.c_str());
      }
    } cleanup{args[2]};
    Summary sum;
    Progress progress(size);
    static char empty[1];
    char* dst = f.p ? f.p : empty;
    if (rc) {
      // Ranged requests of at most kPart bytes: one token each (tokens describe < 4 GiB).
      uint64_t off = 0;
      do {
        size_t n = static_cast<size_t>(std::min<uint64_t>(kPart, size - off));
        std::optional<rdmastor::client::ByteRange> range;
        if (size > kPart) range = rdmastor::client::ByteRange{off, off + n - 1};
        char* buf = staging.p ? staging.p : dst;
        auto r = rc->Get(bucket, key, buf, n, range);
        if (!r.ok()) return Fail(r.error().message);
        for (size_t done = 0; done < n;) {
          ssize_t w = pwrite(f.fd, buf + done, n - done, static_cast<off_t>(off + done));
          if (w < 0 && errno == EINTR) continue;
          if (w <= 0) return Fail("cannot write " + args[2] + ": " + std::strerror(errno));
          done += static_cast<size_t>(w);
        }
        sum.transport = std::string(rdmastor::client::TransportName(r->transport));
        off += n;
        sum.bytes = off;
        progress.Update(off);
      } while (off < size);
      if (staging.p) rc->Forget(staging.p, staging.size);  // deregister before the unmap
    } else if (!progress.on()) {
      auto r = s3.GetObjectInto(bucket, key, std::nullopt, dst, size);  // received in place
      if (!r.ok()) return Fail(r.error().message);
      sum.bytes = r->bytes;
    } else {
      uint64_t got = 0;
      auto sink = [&](const char* p, size_t n) -> rdmastor::Status {
        if (n > size - got)
          return rdmastor::MakeError(
              rdmastor::ErrorCode::kInternalError,
              "the object grew since HEAD: got more than " + std::to_string(size) + " bytes");
        std::memcpy(dst + got, p, n);
        got += n;
        progress.Update(got);
        return {};
      };
      auto r = s3.GetObject(bucket, key, std::nullopt, sink);
      if (!r.ok()) return Fail(r.error().message);
      if (got != size)
        return Fail("GET " + target + ": got " + std::to_string(got) + " of " +
                    std::to_string(size) + " bytes (the object changed since HEAD)");
      sum.bytes = got;
    }
    progress.Update(size);
    if (f.p && msync(f.p, size, MS_SYNC) != 0)
      return Fail("cannot write " + args[2] + ": " + std::strerror(errno));
    if (rc && fsync(f.fd) != 0)
      return Fail("cannot write " + args[2] + ": " + std::strerror(errno));
    cleanup.keep = true;
    sum.Print("get");
    if (g_json)
      PrintJson("success", {{"bucket", bucket}, {"key", key}, {"file", args[2]}, {"bytes", sum.bytes},
                            {"seconds", sum.Seconds()}, {"transport", sum.transport},
                            {"retries", s3.retries()}});
    return 0;
  }
  return Usage("unknown command '" + cmd + "'", "");
}
