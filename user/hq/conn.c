// SPDX-License-Identifier: GPL-2.0
/*
 * Sockets: the TCP listener agents connect to, the greeting of a new
 * connection (notes §4.1: its first two bytes say what it is), buffered
 * non-blocking I/O, and the local control socket (one text command per
 * connection, one line of answer).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "hq.h"

static int set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

int hq_addr_canon(const char *s, char *out)
{
	struct in6_addr a6;
	struct in_addr a4;

	if (inet_pton(AF_INET, s, &a4) == 1)
		return inet_ntop(AF_INET, &a4, out, 48) ? 0 : -1;
	if (inet_pton(AF_INET6, s, &a6) != 1)
		return -1;
	if (IN6_IS_ADDR_V4MAPPED(&a6)) {
		memcpy(&a4, &a6.s6_addr[12], 4);
		return inet_ntop(AF_INET, &a4, out, 48) ? 0 : -1;
	}
	return inet_ntop(AF_INET6, &a6, out, 48) ? 0 : -1;
}

int hq_listen_on(const char *host, unsigned int port)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC,
				  .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE | AI_NUMERICSERV };
	struct addrinfo *res, *ai;
	char port_s[16];
	int fd = -1, one = 1, err;

	snprintf(port_s, sizeof(port_s), "%u", port);
	err = getaddrinfo(host, port_s, &hints, &res);
	if (err) {
		hq_log("cannot resolve %s: %s", host, gai_strerror(err));
		return -1;
	}
	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, 0);
		if (fd < 0)
			continue;
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (!bind(fd, ai->ai_addr, ai->ai_addrlen) && !listen(fd, 64))
			break;
		err = errno;
		close(fd);
		fd = -1;
		errno = err;
	}
	freeaddrinfo(res);
	if (fd < 0) {
		hq_log("cannot listen on %s:%u: %s", host, port,
		       strerror(errno));
		return -1;
	}
	set_nonblock(fd);
	return fd;
}

int hq_listen(struct hq *hq)
{
	hq->listen_fd = hq_listen_on(hq->o.listen_host, hq->o.port);
	return hq->listen_fd < 0 ? -1 : 0;
}

int hq_ctl_listen(struct hq *hq)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(hq->o.control_path) >= sizeof(sa.sun_path)) {
		hq_log("control socket path too long: %s", hq->o.control_path);
		return -1;
	}
	strcpy(sa.sun_path, hq->o.control_path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	unlink(sa.sun_path);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 8)) {
		hq_log("cannot listen on %s: %s", sa.sun_path, strerror(errno));
		close(fd);
		return -1;
	}
	set_nonblock(fd);
	hq->ctl_fd = fd;
	return 0;
}

/* The client side of the control socket: bfhq --control PATH --send CMD. */
int hq_ctl_send(const char *path, const char *cmd)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char reply[4096];
	size_t n = 0;
	ssize_t r;
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "bfhq: control socket path too long\n");
		return 1;
	}
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		fprintf(stderr, "bfhq: cannot connect to %s: %s\n", path,
			strerror(errno));
		if (fd >= 0)
			close(fd);
		return 1;
	}
	if (write(fd, cmd, strlen(cmd)) < 0 || write(fd, "\n", 1) < 0) {
		fprintf(stderr, "bfhq: %s: %s\n", path, strerror(errno));
		close(fd);
		return 1;
	}
	shutdown(fd, SHUT_WR);
	while (n < sizeof(reply) - 1 &&
	       (r = read(fd, reply + n, sizeof(reply) - 1 - n)) > 0)
		n += (size_t)r;
	close(fd);
	reply[n] = 0;
	fputs(reply, stdout);
	return strncmp(reply, "ok", 2) ? 1 : 0;
}

struct conn *hq_conn_add(struct hq *hq, int fd, enum conn_kind kind)
{
	struct conn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	if (hq->nconns == hq->conns_cap) {
		unsigned int cap = hq->conns_cap ? 2 * hq->conns_cap : 16;
		struct conn **v = realloc(hq->conns, cap * sizeof(*v));

		if (!v) {
			free(c);
			return NULL;
		}
		hq->conns = v;
		hq->conns_cap = cap;
	}
	c->fd = fd;
	c->kind = kind;
	c->wait_run = -1;
	c->since_ms = hq_now_ms();
	hq->conns[hq->nconns++] = c;
	return c;
}

void hq_accept(struct hq *hq)
{
	for (;;) {
		struct sockaddr_storage ss;
		socklen_t len = sizeof(ss);
		char host[48] = "?";
		struct conn *c;
		int one = 1;
		int fd = accept4(hq->listen_fd, (struct sockaddr *)&ss, &len,
				 SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0)
			return;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		c = hq_conn_add(hq, fd, CONN_GREETING);
		if (!c) {
			close(fd);
			continue;
		}
		if (ss.ss_family == AF_INET) {
			struct sockaddr_in *in = (struct sockaddr_in *)&ss;

			inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
			snprintf(c->peer, sizeof(c->peer), "%s:%u", host,
				 ntohs(in->sin_port));
		} else if (ss.ss_family == AF_INET6) {
			struct sockaddr_in6 *in = (struct sockaddr_in6 *)&ss;

			inet_ntop(AF_INET6, &in->sin6_addr, host, sizeof(host));
			snprintf(c->peer, sizeof(c->peer), "[%s]:%u", host,
				 ntohs(in->sin6_port));
		}
		if (hq_addr_canon(host, c->addr))
			c->addr[0] = 0;
		if (hq->o.verbose)
			hq_log("connection from %s", c->peer);
	}
}

void hq_ctl_accept(struct hq *hq)
{
	for (;;) {
		int fd = accept4(hq->ctl_fd, NULL, NULL,
				 SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct conn *c;

		if (fd < 0)
			return;
		c = hq_conn_add(hq, fd, CONN_CTL);
		if (!c) {
			close(fd);
			continue;
		}
		snprintf(c->peer, sizeof(c->peer), "control");
	}
}

void hq_conn_write(struct conn *c)
{
	if (c->fd < 0) {
		/* No socket (tests, fuzzing): the caller reads c->out. */
		if (c->close_after_flush)
			c->dead = true;
		return;
	}
	while (c->out.len && !c->dead) {
		ssize_t n = send(c->fd, c->out.data, c->out.len, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return;
			c->out.len = 0;
			c->dead = true;	/* the peer is gone */
			return;
		}
		bft_buf_consume(&c->out, (size_t)n);
	}
	if (!c->out.len && c->close_after_flush)
		c->dead = true;
}

int hq_send(struct conn *c, unsigned int version, const struct bfp_msg *m)
{
	int err = bfp_encode(&c->out, version, m);

	if (!err)
		hq_conn_write(c);
	return err;
}

void hq_send_error(struct conn *c, const char *text)
{
	struct bfp_msg m = { .id = BFP_ERROR, .str = text,
			     .str_len = strlen(text) };

	hq_send(c, 1, &m);	/* the same layout in every version */
	c->close_after_flush = true;
	hq_conn_write(c);
}

void hq_conn_close(struct hq *hq, struct conn *c)
{
	if (c->dead && c->fd < 0)
		return;
	c->dead = true;
	if (c->trace)
		hq_trace_conn_closed(hq, c->trace, c);
	c->trace = NULL;
}

/*
 * A data connection joins its run only from where the run's control
 * connection came (or an address --data-from names): the run id is one
 * byte, and anyone who could connect could otherwise write into another
 * agent's trace.
 */
static bool data_from_ok(struct hq *hq, struct trace *t, struct conn *c)
{
	unsigned int i;

	if (hq->o.data_from_any || (t->control &&
				    !strcmp(t->control->addr, c->addr)))
		return true;
	for (i = 0; i < hq->o.ndata_from; i++)
		if (!strcmp(hq->o.data_from[i], c->addr))
			return true;
	hq_log("%s: data connection for run %u, whose agent is at %s: "
	       "refused (--data-from)", c->peer, t->run_id,
	       t->control ? t->control->peer : "?");
	hq_send_error(c, "Data connection refused: not from the agent's "
			 "address");
	return false;
}

static void join(struct hq *hq, struct trace *t, struct conn *c)
{
	c->wait_run = -1;
	if (data_from_ok(hq, t, c))
		hq_trace_add_data(hq, t, c);
}

/* notes §4.1: (0, v) hello, (30, run) data hello, anything else refused. */
static void greet(struct hq *hq, struct conn *c)
{
	const uint8_t *p = c->in.data;
	struct trace *t;

	if (c->in.len < 2)
		return;
	if (p[0] == BFP_HELLO) {
		uint8_t version = p[1];	/* p moves with the consume */

		if (version < BFP_VERSION_MIN || version > BFP_VERSION_MAX) {
			hq_log("%s: hello with protocol version %u: refused",
			       c->peer, version);
			hq_send_error(c, "Invalid Protocol Version");
			return;
		}
		bft_buf_consume(&c->in, 2);
		c->kind = CONN_CONTROL;
		t = hq_trace_new(hq, c, version);
		if (!t)
			hq_send_error(c, "HQ is not expecting a new connection "
					 "at this time");
		return;
	}
	if (p[0] == BFP_DATA_HELLO) {
		uint8_t run = p[1];

		bft_buf_consume(&c->in, 2);
		c->kind = CONN_DATA;
		t = hq_trace_by_run(hq, run);
		if (t) {
			join(hq, t, c);
		} else {
			c->wait_run = run;	/* a trace may register soon */
			c->since_ms = hq_now_ms();
		}
		return;
	}
	hq_log("%s: unexpected first bytes %02x %02x: refused", c->peer, p[0],
	       p[1]);
	hq_send_error(c, "Unexpected Input Format");
}

void hq_greet_timeouts(struct hq *hq, uint64_t now)
{
	unsigned int i;

	for (i = 0; i < hq->nconns; i++) {
		struct conn *c = hq->conns[i];

		if (c->dead || c->close_after_flush)
			continue;
		if (c->kind == CONN_GREETING &&
		    now - c->since_ms > HQ_GREET_TIMEOUT_MS) {
			hq_log("%s: no greeting within %u ms: closed", c->peer,
			       HQ_GREET_TIMEOUT_MS);
			c->dead = true;
		} else if (c->kind == CONN_DATA && !c->trace &&
			   c->wait_run >= 0) {
			struct trace *t = hq_trace_by_run(hq,
							  (uint8_t)c->wait_run);

			if (t) {
				join(hq, t, c);
			} else if (now - c->since_ms > HQ_DATA_WAIT_MS) {
				hq_log("%s: data hello for unknown run %d",
				       c->peer, c->wait_run);
				hq_send_error(c, "Data connection timed out "
						 "waiting for a valid trace");
			}
		}
	}
}

static int cmd_id(const char *w)
{
	static const struct { const char *name; uint8_t id; } cmds[] = {
		{ "start", BFP_START }, { "stop", BFP_STOP },
		{ "pause", BFP_PAUSE }, { "unpause", BFP_UNPAUSE },
		{ "suspend", BFP_SUSPEND }, { "unsuspend", BFP_UNSUSPEND },
	};
	unsigned int i;

	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (!strcmp(w, cmds[i].name))
			return cmds[i].id;
	return -1;
}

static void ctl_reply(struct conn *c, const char *text)
{
	bft_buf_append(&c->out, text, strlen(text));
	c->close_after_flush = true;
	hq_conn_write(c);
}

/* "CMD [RUN]": to every live trace, or to the one with that run id. */
static void ctl_command(struct hq *hq, struct conn *c, char *line)
{
	char word[32] = "", reply[512];
	int run = -1, id, n = 0, k = 0;
	unsigned int i;

	if (sscanf(line, "%31s %d", word, &run) < 1) {
		ctl_reply(c, "error: empty command\n");
		return;
	}
	if (!strcmp(word, "status")) {
		k = snprintf(reply, sizeof(reply), "ok");
		for (i = 0; i < hq->ntraces && k < (int)sizeof(reply) - 64; i++) {
			struct trace *t = hq->traces[i];

			if (t->finished)
				continue;
			k += snprintf(reply + k, sizeof(reply) - k,
				      " run=%u:v%u:mode=%c:data=%u",
				      t->run_id, t->version,
				      t->last_mode ? t->last_mode : '-',
				      t->data_open);
		}
		snprintf(reply + k, sizeof(reply) - k, "\n");
		ctl_reply(c, reply);
		return;
	}
	id = cmd_id(word);
	if (id < 0) {
		ctl_reply(c, "error: unknown command (start, stop, pause, "
			     "unpause, suspend, unsuspend, status)\n");
		return;
	}
	for (i = 0; i < hq->ntraces; i++) {
		struct trace *t = hq->traces[i];

		if (t->finished || t->control_closed ||
		    (run >= 0 && t->run_id != run))
			continue;
		if (!hq_trace_command(hq, t, (uint8_t)id))
			n++;
	}
	snprintf(reply, sizeof(reply), n ? "ok %s sent to %d agent%s\n" :
				       "error: no agent to send %s to\n",
		 word, n, n == 1 ? "" : "s");
	ctl_reply(c, reply);
}

static void ctl_read(struct hq *hq, struct conn *c)
{
	char *nl = memchr(c->in.data, '\n', c->in.len);

	if (!nl) {
		if (c->in.len > 256)
			ctl_reply(c, "error: command too long\n");
		return;
	}
	*nl = 0;
	ctl_command(hq, c, (char *)c->in.data);
	c->in.len = 0;
}

/* Decode whole messages of a control or data connection. */
static void decode_all(struct hq *hq, struct conn *c)
{
	struct trace *t = c->trace;
	struct bfp_msg m = { 0 };
	struct bfp_error err;
	size_t pos = 0;

	while (t && !c->dead && !c->close_after_flush && pos < c->in.len) {
		enum bfp_ctx ctx = c->kind == CONN_CONTROL ? BFP_CTX_HQ_CONTROL :
							     BFP_CTX_HQ_DATA;
		int r = bfp_decode(c->in.data + pos, c->in.len - pos,
				   t->version, ctx, &m, &err);

		if (r == 0)
			break;
		if (r < 0) {
			hq_trace_fail(hq, t, c, "%s connection: %s",
				      c->kind == CONN_CONTROL ? "control" :
								"data",
				      err.msg);
			break;
		}
		pos += (size_t)r;
		c->msgs_in++;
		t->wire_bytes += (size_t)r;
		if (c->kind == CONN_CONTROL)
			hq_trace_control_msg(hq, t, &m);
		else
			hq_trace_data_msg(hq, t, c, &m);
		t = c->trace;
	}
	bfp_msg_free(&m);
	if (pos)
		bft_buf_consume(&c->in, pos);
}

void hq_conn_read(struct hq *hq, struct conn *c)
{
	bool eof = false;

	for (;;) {
		ssize_t n;

		if (bft_buf_reserve(&c->in, 65536)) {
			hq_log("%s: out of memory", c->peer);
			c->dead = true;
			return;
		}
		n = recv(c->fd, c->in.data + c->in.len,
			 c->in.cap - c->in.len, 0);
		if (n > 0) {
			c->in.len += (size_t)n;
			c->bytes_in += (size_t)n;
			if (c->in.len >= 1u << 20)
				break;	/* decode before reading more */
			continue;
		}
		if (n == 0)
			eof = true;
		else if (errno == EINTR)
			continue;
		else if (errno != EAGAIN)
			eof = true;
		break;
	}
	hq_conn_process(hq, c, eof);
}

void hq_conn_feed(struct hq *hq, struct conn *c, const void *p, size_t n,
		  bool eof)
{
	if (c->dead)
		return;
	if (n && bft_buf_append(&c->in, p, n)) {
		hq_log("%s: out of memory", c->peer);
		c->dead = true;
		return;
	}
	c->bytes_in += n;
	hq_conn_process(hq, c, eof);
}

void hq_conn_process(struct hq *hq, struct conn *c, bool eof)
{
	if (c->close_after_flush) {
		c->in.len = 0;	/* an error was sent; ignore the rest */
		if (eof)
			c->dead = true;
		return;
	}
	switch (c->kind) {
	case CONN_GREETING:
		greet(hq, c);
		if (c->kind == CONN_GREETING)
			break;
		/* bytes after the greeting */
		__attribute__((fallthrough));
	case CONN_CONTROL:
	case CONN_DATA:
		if (c->trace) {
			decode_all(hq, c);
		} else if (c->kind == CONN_DATA && c->wait_run >= 0 &&
			   c->in.len > HQ_DATA_WAIT_MAX) {
			/* kept for a run that may come, but not without end */
			hq_log("%s: more than %u bytes for unknown run %d: "
			       "closed", c->peer, HQ_DATA_WAIT_MAX,
			       c->wait_run);
			hq_send_error(c, "Data connection sent too much "
					 "before its trace was known");
			c->in.len = 0;
		}
		break;
	case CONN_CTL:
		ctl_read(hq, c);
		break;
	}
	if (eof) {
		if (c->kind == CONN_CONTROL || c->kind == CONN_DATA) {
			if (c->in.len && c->trace && !c->trace->failed)
				hq_log("run %u: %s connection ended inside a "
				       "message (%zu bytes left)",
				       c->trace->run_id,
				       c->kind == CONN_CONTROL ? "control" :
								 "data",
				       c->in.len);
		}
		hq_conn_close(hq, c);
	}
}
