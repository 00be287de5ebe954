// A hostile S3-over-RDMA RC client for the guest tests (tests/rxe/test_faults_rxe.py): it asks
// the server's rdma_cm listener for a connection the way rdmastor's client does (a Hello with
// kRcMagic), but with a QP that rdma_cm does not manage, so that it receives the accept and then
// never completes the handshake (no rdma_establish: the server never sees ESTABLISHED). It holds
// that half-open connection until it is killed or `hold_seconds` pass.
//   rc_stall_client IP PORT HOLD_SECONDS   -> prints "accepted" once the server accepted
#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "rdma/soft/soft_wire.h"

namespace {

int Fail(const char* what) {
  std::fprintf(stderr, "rc_stall_client: %s: %s\n", what, std::strerror(errno));
  return 1;
}

// The next event on ch, acknowledged; -1 when none came (rdma_get_cm_event failed).
int Next(rdma_event_channel* ch) {
  rdma_cm_event* ev = nullptr;
  if (rdma_get_cm_event(ch, &ev)) return -1;
  int type = ev->event;
  rdma_ack_cm_event(ev);
  return type;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: rc_stall_client IP PORT HOLD_SECONDS\n");
    return 2;
  }
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<uint16_t>(std::atoi(argv[2])));
  if (inet_pton(AF_INET, argv[1], &to.sin_addr) != 1) return Fail("inet_pton");
  rdma_event_channel* ch = rdma_create_event_channel();
  rdma_cm_id* id = nullptr;
  if (!ch || rdma_create_id(ch, &id, nullptr, RDMA_PS_TCP)) return Fail("rdma_create_id");
  if (rdma_resolve_addr(id, nullptr, reinterpret_cast<sockaddr*>(&to), 5000) ||
      Next(ch) != RDMA_CM_EVENT_ADDR_RESOLVED)
    return Fail("resolve address");
  if (rdma_resolve_route(id, 5000) || Next(ch) != RDMA_CM_EVENT_ROUTE_RESOLVED)
    return Fail("resolve route");
  // A QP of our own, not id->qp: rdma_cm then leaves the handshake's last step to us.
  ibv_pd* pd = ibv_alloc_pd(id->verbs);
  ibv_cq* cq = pd ? ibv_create_cq(id->verbs, 4, nullptr, nullptr, 0) : nullptr;
  ibv_qp_init_attr qa{};
  qa.send_cq = qa.recv_cq = cq;
  qa.qp_type = IBV_QPT_RC;
  qa.cap = {1, 1, 1, 1, 0};
  ibv_qp* qp = cq ? ibv_create_qp(pd, &qa) : nullptr;
  if (!qp) return Fail("ibv_create_qp");
  rdmastor::rdma::soft::wire::Hello hello;
  hello.magic = rdmastor::rdma::soft::wire::kRcMagic;
  rdma_conn_param cp{};
  cp.private_data = &hello;
  cp.private_data_len = sizeof(hello);
  cp.qp_num = qp->qp_num;
  cp.responder_resources = 1;
  cp.initiator_depth = 0;
  cp.retry_count = 7;
  cp.rnr_retry_count = 7;
  if (rdma_connect(id, &cp)) return Fail("rdma_connect");
  int type = Next(ch);
  if (type != RDMA_CM_EVENT_CONNECT_RESPONSE) {
    std::fprintf(stderr, "rc_stall_client: the server answered %s, not an accept\n",
                 type < 0 ? "nothing" : rdma_event_str(static_cast<rdma_cm_event_type>(type)));
    return 1;
  }
  std::printf("accepted\n");
  std::fflush(stdout);
  sleep(static_cast<unsigned>(std::atoi(argv[3])));  // and never rdma_establish
  return 0;
}
