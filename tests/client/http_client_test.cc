// HttpClient: URL parsing, and HTTPS against a small OpenSSL server in this process with
// certificates made here (a throw-away CA, server certificates with IP / DNS names): trust from
// CA files and a CAs directory, keep-alive, large bodies both ways, SNI, and the refusals
// (unknown CA, wrong name, a server that is not TLS, one that never answers the handshake).
#include "client/http_client.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <thread>

namespace rdmastor::client {
namespace {

using namespace std::chrono_literals;

// --- URLs -----------------------------------------------------------------------------------

TEST(ParseHttpUrl, SchemesAndDefaultPorts) {
  auto h = ParseHttpUrl("http://node1/mnt/d1/");
  ASSERT_TRUE(h.ok()) << h.error().message;
  EXPECT_FALSE(h->tls);
  EXPECT_EQ(h->host, "node1");
  EXPECT_EQ(h->port, 80);
  EXPECT_FALSE(h->has_port);
  EXPECT_EQ(h->path, "/mnt/d1");

  auto s = ParseHttpUrl("https://node1");
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_TRUE(s->tls);
  EXPECT_EQ(s->port, 443);
  EXPECT_FALSE(s->has_port);
  EXPECT_EQ(s->path, "");

  auto upper = ParseHttpUrl("HTTPS://[::1]:9443/x");
  ASSERT_TRUE(upper.ok()) << upper.error().message;
  EXPECT_TRUE(upper->tls);
  EXPECT_EQ(upper->host, "::1");
  EXPECT_EQ(upper->port, 9443);
  EXPECT_TRUE(upper->has_port);

  auto explicit80 = ParseHttpUrl("http://h:80/a");
  ASSERT_TRUE(explicit80.ok());
  EXPECT_TRUE(explicit80->has_port);

  for (const char* bad : {"ftp://h/a", "httpx://h", "https//h", "https://", "https://h:0",
                          "https://h:70000", "https://::1/a", "https://u@h/a"}) {
    EXPECT_FALSE(ParseHttpUrl(bad).ok()) << bad;
  }
  auto ftp = ParseHttpUrl("ftp://h/a");
  EXPECT_NE(ftp.error().message.find("https://"), std::string::npos) << ftp.error().message;
}

TEST(HostHeaderValue, OmitsTheSchemesDefaultPort) {
  EXPECT_EQ(HostHeaderValue("h", 80), "h");
  EXPECT_EQ(HostHeaderValue("h", 443), "h:443");
  EXPECT_EQ(HostHeaderValue("h", 443, true), "h");
  EXPECT_EQ(HostHeaderValue("h", 80, true), "h:80");
  EXPECT_EQ(HostHeaderValue("::1", 9000, true), "[::1]:9000");
}

TEST(S3ConfigFromEndpoint, HttpsGetsATlsContext) {
  auto plain = S3ConfigFromEndpoint("http://127.0.0.1:9000", "ak", "sk");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->http.tls, nullptr);
  auto tls = S3ConfigFromEndpoint("https://127.0.0.1:9000", "ak", "sk");
  ASSERT_TRUE(tls.ok()) << tls.error().message;
  EXPECT_NE(tls->http.tls, nullptr);
  EXPECT_EQ(tls->port, 9000);
  auto def = S3ConfigFromEndpoint("https://s3.example", "ak", "sk");
  ASSERT_TRUE(def.ok());
  EXPECT_EQ(def->port, 443);
  TlsClientOptions bad;
  bad.ca_files = {"/nonexistent/ca.pem"};
  auto missing = S3ConfigFromEndpoint("https://h", "ak", "sk", "us-east-1", bad);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("/nonexistent/ca.pem"), std::string::npos);
}

// --- certificates ---------------------------------------------------------------------------

struct KeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
struct CertFree {
  void operator()(X509* x) const { X509_free(x); }
};
using Key = std::unique_ptr<EVP_PKEY, KeyFree>;
using Cert = std::unique_ptr<X509, CertFree>;

Key NewKey() { return Key(EVP_EC_gen("P-256")); }

// A CA certificate (issuer null: self-signed) or a server certificate with subjectAltName `san`.
Cert NewCert(const std::string& cn, EVP_PKEY* key, X509* issuer, EVP_PKEY* issuer_key,
             const std::string& san) {
  static std::atomic<long> serial{1};
  Cert x(X509_new());
  X509_set_version(x.get(), 2);
  ASN1_INTEGER_set(X509_get_serialNumber(x.get()), serial++);
  X509_gmtime_adj(X509_getm_notBefore(x.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(x.get()), 86400);
  X509_set_pubkey(x.get(), key);
  X509_NAME* name = X509_get_subject_name(x.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  X509_set_issuer_name(x.get(), issuer ? X509_get_subject_name(issuer) : name);
  X509V3_CTX v3;
  X509V3_set_ctx_nodb(&v3);
  X509V3_set_ctx(&v3, issuer ? issuer : x.get(), x.get(), nullptr, nullptr, 0);
  auto add = [&](int nid, const std::string& value) {
    X509_EXTENSION* e = X509V3_EXT_conf_nid(nullptr, &v3, nid, value.c_str());
    ASSERT_NE(e, nullptr) << value;
    X509_add_ext(x.get(), e, -1);
    X509_EXTENSION_free(e);
  };
  if (issuer == nullptr) {
    add(NID_basic_constraints, "critical,CA:TRUE");
    add(NID_key_usage, "critical,keyCertSign,cRLSign");
  } else {
    add(NID_basic_constraints, "CA:FALSE");
    add(NID_ext_key_usage, "serverAuth");
    add(NID_subject_alt_name, san);
  }
  X509_sign(x.get(), issuer_key ? issuer_key : key, EVP_sha256());
  return x;
}

void WritePem(const std::string& path, X509* cert) {
  FILE* f = std::fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr) << path;
  PEM_write_X509(f, cert);
  std::fclose(f);
}

struct Pki {
  Key ca_key = NewKey();
  Cert ca = NewCert("rdmastor test CA", ca_key.get(), nullptr, nullptr, "");
  Key other_ca_key = NewKey();
  Cert other_ca = NewCert("some other CA", other_ca_key.get(), nullptr, nullptr, "");
  Key server_key = NewKey();
  Cert server =
      NewCert("node", server_key.get(), ca.get(), ca_key.get(), "IP:127.0.0.1,DNS:localhost");
  Cert wrong_name = NewCert("elsewhere", server_key.get(), ca.get(), ca_key.get(),
                            "IP:127.0.0.9,DNS:elsewhere.example");
  std::string dir;

  Pki() {
    char tmpl[] = "/tmp/rdmastor-tls-test-XXXXXX";
    dir = ::mkdtemp(tmpl);
    WritePem(dir + "/ca.pem", ca.get());
    WritePem(dir + "/other-ca.pem", other_ca.get());
  }
  ~Pki() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
};

Pki& TestPki() {
  static Pki pki;
  return pki;
}

// --- a small HTTPS server -------------------------------------------------------------------

// Serves connections one after the other: GET answers a fixed body, PUT echoes its body; every
// response carries the SNI name the client sent (X-Sni). Stops on destruction.
class TlsTestServer {
 public:
  TlsTestServer(X509* cert, EVP_PKEY* key) {
    // This server writes with OpenSSL's socket BIO (write(2)): a client that already closed
    // must not kill the test binary.
    ::signal(SIGPIPE, SIG_IGN);
    ctx_ = SSL_CTX_new(TLS_server_method());
    SSL_CTX_use_certificate(ctx_, cert);
    SSL_CTX_use_PrivateKey(ctx_, key);
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
    EXPECT_EQ(::listen(listen_fd_, 8), 0);
    socklen_t len = sizeof(a);
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { Run(); });
  }
  ~TlsTestServer() {
    stop_ = true;
    ::shutdown(listen_fd_, SHUT_RDWR);  // wakes accept()
    if (int fd = conn_fd_.load(); fd >= 0) ::shutdown(fd, SHUT_RDWR);
    thread_.join();
    ::close(listen_fd_);
    SSL_CTX_free(ctx_);
  }
  uint16_t port() const { return port_; }
  int handshakes() const { return handshakes_; }

 private:
  void Run() {
    while (!stop_) {
      int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) return;
      conn_fd_ = fd;
      if (!stop_) Serve(fd);
      conn_fd_ = -1;
      ::close(fd);
    }
  }

  void Serve(int fd) {
    timeval tv{5, 0};  // bounded: a test that forgets its client does not hang the server
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    SSL* ssl = SSL_new(ctx_);
    SSL_set_fd(ssl, fd);
    if (SSL_accept(ssl) == 1) {
      ++handshakes_;
      const char* sni = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
      Exchange(ssl, sni ? sni : "-");
      SSL_shutdown(ssl);
    }
    SSL_free(ssl);
    ERR_clear_error();
  }

  static bool ReadMore(SSL* ssl, std::string* buf) {
    char tmp[16384];
    int n = SSL_read(ssl, tmp, sizeof(tmp));
    if (n <= 0) return false;
    buf->append(tmp, static_cast<size_t>(n));
    return true;
  }

  static void Exchange(SSL* ssl, const std::string& sni) {
    std::string buf;
    for (;;) {
      size_t end;
      while ((end = buf.find("\r\n\r\n")) == std::string::npos)
        if (!ReadMore(ssl, &buf)) return;
      std::string head = buf.substr(0, end + 4);
      buf.erase(0, end + 4);
      size_t length = 0;
      for (auto& c : head) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (size_t cl = head.find("content-length:"); cl != std::string::npos)
        length = std::stoul(head.substr(cl + 15));
      while (buf.size() < length)
        if (!ReadMore(ssl, &buf)) return;
      std::string body = buf.substr(0, length);
      buf.erase(0, length);
      if (head.rfind("get ", 0) == 0) body = "hello over tls";
      std::string resp = "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) +
                         "\r\nX-Sni: " + sni + "\r\n\r\n" + body;
      if (SSL_write(ssl, resp.data(), static_cast<int>(resp.size())) <= 0) return;
    }
  }

  SSL_CTX* ctx_ = nullptr;
  int listen_fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<int> conn_fd_{-1};
  std::atomic<bool> stop_{false};
  std::atomic<int> handshakes_{0};
  std::thread thread_;
};

std::shared_ptr<const TlsContext> TrustCa(const std::string& ca_file) {
  TlsClientOptions o;
  o.system_store = false;
  o.ca_files = {ca_file};
  auto ctx = TlsContext::Create(o);
  EXPECT_TRUE(ctx.ok()) << ctx.error().message;
  return ctx.ok() ? *ctx : nullptr;
}

HttpClientOptions Tls(std::shared_ptr<const TlsContext> ctx) {
  HttpClientOptions o;
  o.tls = std::move(ctx);
  o.connect_timeout = 3000ms;
  o.io_timeout = 5000ms;
  return o;
}

TEST(HttpClientTls, RoundTripsKeepAliveAndLargeBodies) {
  Pki& pki = TestPki();
  TlsTestServer server(pki.server.get(), pki.server_key.get());
  HttpClient c("127.0.0.1", server.port(), Tls(TrustCa(pki.dir + "/ca.pem")));
  EXPECT_TRUE(c.tls());
  EXPECT_EQ(c.host_header(), "127.0.0.1:" + std::to_string(server.port()));
  // Connect first, then wait: the server's TLS 1.3 session tickets arrive on the idle connection
  // and must not make the first request think the server closed it.
  ASSERT_TRUE(c.Connect().ok());
  std::this_thread::sleep_for(100ms);
  HttpRequest get;
  get.target = "/x";
  auto r = c.Send(get);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "hello over tls");
  // No SNI for an IP literal (RFC 6066).
  ASSERT_NE(r->FindHeader("x-sni"), nullptr);
  EXPECT_EQ(*r->FindHeader("x-sni"), "-");

  // A body larger than one TLS record and than the read buffer, both ways; and a small one (head
  // and body joined into one record).
  std::string big(3 * 1024 * 1024 + 17, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>((i * 131) ^ (i >> 9));
  for (const std::string& payload : {big, std::string("small body")}) {
    HttpRequest put;
    put.method = "PUT";
    put.target = "/echo";
    put.body = payload;
    auto echoed = c.Send(put);
    ASSERT_TRUE(echoed.ok()) << echoed.error().message;
    EXPECT_EQ(echoed->body.size(), payload.size());
    EXPECT_TRUE(echoed->body == payload);
  }
  // Pulled body in pieces.
  size_t offset = 0;
  HttpRequest pulled;
  pulled.method = "PUT";
  pulled.target = "/echo";
  pulled.body_size = big.size();
  pulled.body_pull = [&]() -> Result<std::string_view> {
    size_t n = std::min<size_t>(100000, big.size() - offset);
    std::string_view piece(big.data() + offset, n);
    offset += n;
    return piece;
  };
  std::string sunk;
  auto streamed = c.Send(pulled, ResponseTarget::Sink([&](const char* d, size_t n) -> Status {
                           sunk.append(d, n);
                           return {};
                         }));
  ASSERT_TRUE(streamed.ok()) << streamed.error().message;
  EXPECT_TRUE(sunk == big);
  EXPECT_EQ(c.connects(), 1u);  // one connection, one handshake, for all of it
  EXPECT_EQ(server.handshakes(), 1);
  c.Close();
}

TEST(HttpClientTls, NameSentAsSniAndVerified) {
  Pki& pki = TestPki();
  TlsTestServer server(pki.server.get(), pki.server_key.get());
  HttpClient c("localhost", server.port(), Tls(TrustCa(pki.dir + "/ca.pem")));
  HttpRequest get;
  auto r = c.Send(get);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_NE(r->FindHeader("x-sni"), nullptr);
  EXPECT_EQ(*r->FindHeader("x-sni"), "localhost");
}

TEST(HttpClientTls, TrustsCasDirectory) {
  Pki& pki = TestPki();
  const std::string cas = pki.dir + "/certs/CAs";
  std::filesystem::create_directories(cas);
  WritePem(cas + "/z-other.pem", pki.other_ca.get());
  WritePem(cas + "/ca.crt", pki.ca.get());
  std::ofstream(cas + "/README.txt") << "not a certificate: ignored\n";
  TlsClientOptions o;
  o.system_store = false;
  o.ca_dirs = {cas, pki.dir + "/no-such-dir"};
  auto ctx = TlsContext::Create(o);
  ASSERT_TRUE(ctx.ok()) << ctx.error().message;
  EXPECT_NE((*ctx)->trust_description().find(cas + " (2 file(s))"), std::string::npos)
      << (*ctx)->trust_description();
  TlsTestServer server(pki.server.get(), pki.server_key.get());
  HttpClient c("127.0.0.1", server.port(), Tls(*ctx));
  auto r = c.Send(HttpRequest{});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->body, "hello over tls");

  // A .crt file that is not a certificate is a clear error, naming the file.
  std::ofstream(cas + "/broken.crt") << "garbage\n";
  auto broken = TlsContext::Create(o);
  ASSERT_FALSE(broken.ok());
  EXPECT_NE(broken.error().message.find(cas + "/broken.crt"), std::string::npos)
      << broken.error().message;
  std::filesystem::remove(cas + "/broken.crt");
}

TEST(HttpClientTls, RefusesAnUntrustedCertificate) {
  Pki& pki = TestPki();
  TlsTestServer server(pki.server.get(), pki.server_key.get());
  HttpClient c("127.0.0.1", server.port(), Tls(TrustCa(pki.dir + "/other-ca.pem")));
  auto r = c.Send(HttpRequest{});
  ASSERT_FALSE(r.ok());
  const std::string& m = r.error().message;
  EXPECT_NE(m.find("https://127.0.0.1:"), std::string::npos) << m;
  EXPECT_NE(m.find("certificate verification failed"), std::string::npos) << m;
  EXPECT_NE(m.find("rdmastor test CA"), std::string::npos) << m;  // the issuer it did not trust
  EXPECT_NE(m.find("other-ca.pem"), std::string::npos) << m;      // what it trusted
  EXPECT_FALSE(c.connected());
}

TEST(HttpClientTls, RefusesACertificateForAnotherName) {
  Pki& pki = TestPki();
  TlsTestServer server(pki.wrong_name.get(), pki.server_key.get());
  auto ctx = TrustCa(pki.dir + "/ca.pem");
  HttpClient by_ip("127.0.0.1", server.port(), Tls(ctx));
  auto r = by_ip.Send(HttpRequest{});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("IP address mismatch"), std::string::npos) << r.error().message;
  HttpClient by_name("localhost", server.port(), Tls(ctx));
  auto n = by_name.Send(HttpRequest{});
  ASSERT_FALSE(n.ok());
  EXPECT_NE(n.error().message.find("hostname mismatch"), std::string::npos) << n.error().message;
}

// A listening socket that never accepts: the kernel completes TCP, nobody answers TLS.
struct SilentListener {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  uint16_t port = 0;
  SilentListener() {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
    ::listen(fd, 4);
    socklen_t len = sizeof(a);
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
  }
  ~SilentListener() { ::close(fd); }
};

TEST(HttpClientTls, HandshakeBoundedByConnectTimeout) {
  Pki& pki = TestPki();
  SilentListener silent;
  HttpClientOptions o = Tls(TrustCa(pki.dir + "/ca.pem"));
  o.connect_timeout = 300ms;
  o.io_timeout = 60000ms;
  HttpClient c("127.0.0.1", silent.port, o);
  auto start = std::chrono::steady_clock::now();
  auto r = c.Send(HttpRequest{});
  auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kRequestTimeout) << r.error().message;
  EXPECT_NE(r.error().message.find("TLS handshake timed out"), std::string::npos)
      << r.error().message;
  EXPECT_LT(took, 5s);
}

TEST(HttpClientTls, ServerThatIsNotTls) {
  Pki& pki = TestPki();
  SilentListener plain;
  // Accept and close at once, as an HTTP server does with a request it cannot parse.
  std::thread closer([&] {
    int fd = ::accept(plain.fd, nullptr, nullptr);
    if (fd >= 0) {
      const char reply[] = "HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n";
      (void)!::write(fd, reply, sizeof(reply) - 1);
      ::close(fd);
    }
  });
  HttpClient c("127.0.0.1", plain.port, Tls(TrustCa(pki.dir + "/ca.pem")));
  auto r = c.Send(HttpRequest{});
  closer.join();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("is the server speaking HTTPS?"), std::string::npos)
      << r.error().message;
}

}  // namespace
}  // namespace rdmastor::client
