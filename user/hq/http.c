// SPDX-License-Identifier: GPL-2.0
/*
 * bfhq --http: the live viewer's server (libmicrohttpd, its own thread).
 *
 * It reads only the files of docs/live-format.md under the output
 * directory, never bfhq's memory: the receive loop is never held up by a
 * viewer, and a finished trace, the directory of a killed bfhq and a
 * --replay all look the same to it.
 *
 *   GET /                        the page (www/index.html)
 *   GET /static/NAME             the page's scripts and styles (www/NAME)
 *   GET /api/traces              the traces with a live/ directory, and
 *                                their meta.json
 *   GET /api/traces/N/events     Server-Sent Events of trace-N: everything
 *                                the indexes cover so far, then what new
 *                                entries cover, as they appear
 *   GET /api/counters/events     Server-Sent Events of the counters an
 *                                inspector (bfhq --counters) records in
 *                                counters.jsonl: every line so far, then
 *                                each new one
 *
 * What a viewer is sent comes from http_feed.c.  Its stream is a content
 * reader callback.  When it has nothing to send it suspends its
 * connection; a ticker thread resumes the suspended ones to look again
 * when inotify says a watched live directory changed (every HTTP_TICK_MS
 * at the latest).  A change seen while a viewer was looking (not yet
 * suspended) makes it look again rather than sleep: else an index entry
 * written just after its look would wait for the next change or tick.  So no thread waits for a viewer, and one that went
 * away is noticed at the next write (a keep-alive comment at least every
 * HTTP_KEEPALIVE_MS), which frees its state.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <microhttpd.h>

#include "bft_util.h"
#include "hq.h"
#include "http.h"
#include "http_feed.h"

/* New data wakes the viewers at once (inotify); this is the fallback. */
#define HTTP_TICK_MS		1000
#define HTTP_KEEPALIVE_MS	5000
#define HTTP_MAX_CONNS		256
#define HTTP_STATIC_MAX		(4u << 20)

#define LIVE_DIR		"live"
#define HTTP_MAX_NAMES		12
#define HTTP_MISDIRECTED	421

struct viewer {
	struct hq_http *h;
	struct MHD_Connection *conn;
	struct feed *feed;
	bool ended;		/* "end" queued: the stream closes after it */
	struct bft_buf out;
	size_t out_pos;
	uint64_t last_write_ms;
	bool suspended;		/* under h->lock */
	uint64_t looked;	/* h->changes when it last looked */
	struct viewer *next;	/* h->viewers, under h->lock */
};

struct hq_http {
	struct MHD_Daemon *d;
	char outdir[PATH_MAX];
	char www[PATH_MAX + 64];
	unsigned int port;
	pthread_t ticker;
	pthread_mutex_t lock;
	int inotify_fd;		/* the live directories of open viewers */
	int stop_fd;		/* eventfd: the ticker ends */
	bool stopping;		/* under lock */
	uint64_t changes;	/* inotify wake-ups so far, under lock */
	struct viewer *viewers;
	/* the Host names served (hq_http_names), lower case */
	char names[HTTP_MAX_NAMES][256];
	unsigned int nnames;
	bool any_host;
};

static void viewer_free(struct viewer *v)
{
	feed_free(v->feed);
	bft_buf_free(&v->out);
	free(v);
}

static ssize_t viewer_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct viewer *v = cls;
	struct hq_http *h = v->h;
	uint64_t now = hq_now_ms();
	size_t n;

	(void)pos;
	pthread_mutex_lock(&h->lock);
	if (h->stopping) {
		pthread_mutex_unlock(&h->lock);
		return MHD_CONTENT_READER_END_OF_STREAM;
	}
	pthread_mutex_unlock(&h->lock);
	while (v->out_pos == v->out.len) {
		v->out.len = v->out_pos = 0;
		if (v->ended)
			return MHD_CONTENT_READER_END_OF_STREAM;
		pthread_mutex_lock(&h->lock);
		v->looked = h->changes;
		pthread_mutex_unlock(&h->lock);
		v->ended = feed_refill(v->feed, &v->out);
		if (v->out_pos < v->out.len)
			break;
		if (now - v->last_write_ms >= HTTP_KEEPALIVE_MS) {
			bft_buf_append(&v->out, ": keep-alive\n\n", 14);
			break;
		}
		pthread_mutex_lock(&h->lock);
		/*
		 * Not once hq_http_stop() has begun: it resumes what is
		 * suspended before this, and libmicrohttpd aborts the
		 * whole process when it is stopped with a connection
		 * still suspended.
		 */
		if (h->stopping) {
			pthread_mutex_unlock(&h->lock);
			return MHD_CONTENT_READER_END_OF_STREAM;
		}
		if (v->looked == h->changes) {
			v->suspended = true;
			MHD_suspend_connection(v->conn);
			pthread_mutex_unlock(&h->lock);
			return 0;
		}
		pthread_mutex_unlock(&h->lock);
	}
	n = v->out.len - v->out_pos;
	if (n > max)
		n = max;
	memcpy(buf, v->out.data + v->out_pos, n);
	v->out_pos += n;
	v->last_write_ms = now;
	return (ssize_t)n;
}

static void viewer_done(void *cls)
{
	struct viewer *v = cls;
	struct hq_http *h = v->h;
	struct viewer **p;

	pthread_mutex_lock(&h->lock);
	for (p = &h->viewers; *p; p = &(*p)->next)
		if (*p == v) {
			*p = v->next;
			break;
		}
	pthread_mutex_unlock(&h->lock);
	viewer_free(v);
}

/*
 * Resume the suspended viewers when a live directory changed (inotify),
 * or every HTTP_TICK_MS at the latest, to look again.
 */
static void *ticker(void *arg)
{
	struct hq_http *h = arg;
	char buf[4096];

	for (;;) {
		struct pollfd p[2] = { { .fd = h->inotify_fd, .events = POLLIN },
				       { .fd = h->stop_fd, .events = POLLIN } };
		struct viewer *v;

		if (poll(p, 2, HTTP_TICK_MS) < 0 && errno != EINTR)
			break;
		if (p[0].revents & POLLIN)
			while (read(h->inotify_fd, buf, sizeof(buf)) > 0)
				;
		pthread_mutex_lock(&h->lock);
		if (h->stopping) {
			pthread_mutex_unlock(&h->lock);
			break;
		}
		h->changes++;
		for (v = h->viewers; v; v = v->next)
			if (v->suspended) {
				v->suspended = false;
				MHD_resume_connection(v->conn);
			}
		pthread_mutex_unlock(&h->lock);
	}
	return NULL;
}

/* ---- routes ---- */

static enum MHD_Result reply(struct MHD_Connection *c, unsigned int status,
			     const char *type, const void *p, size_t n)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	r = MHD_create_response_from_buffer(n, (void *)p,
					    MHD_RESPMEM_MUST_COPY);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, "Content-Type", type);
	MHD_add_response_header(r, "Cache-Control", "no-store");
	/* the page works offline: nothing may come from elsewhere */
	MHD_add_response_header(r, "Content-Security-Policy",
				"default-src 'self'; style-src 'self'");
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result reply_text(struct MHD_Connection *c,
				  unsigned int status, const char *text)
{
	return reply(c, status, "text/plain; charset=utf-8", text,
		     strlen(text));
}

static const char *content_type(const char *name)
{
	static const struct { const char *ext, *type; } types[] = {
		{ ".html", "text/html; charset=utf-8" },
		{ ".js", "text/javascript; charset=utf-8" },
		{ ".css", "text/css; charset=utf-8" },
		{ ".svg", "image/svg+xml" },
	};
	const char *dot = strrchr(name, '.');

	for (size_t i = 0; dot && i < sizeof(types) / sizeof(types[0]); i++)
		if (!strcmp(dot, types[i].ext))
			return types[i].type;
	return "application/octet-stream";
}

/* www/NAME: a plain name, no directories, no dot files. */
static enum MHD_Result serve_static(struct hq_http *h, struct MHD_Connection *c,
				    const char *name)
{
	char path[PATH_MAX + 64 + 300];
	struct bft_buf b = { 0 };
	struct stat st;
	enum MHD_Result ret;
	int fd;

	if (!*name || name[0] == '.' || strlen(name) > 255 ||
	    name[strspn(name, "abcdefghijklmnopqrstuvwxyz"
			      "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")])
		return reply_text(c, MHD_HTTP_NOT_FOUND, "no such file\n");
	snprintf(path, sizeof(path), "%s/%s", h->www, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return reply_text(c, MHD_HTTP_NOT_FOUND, "no such file\n");
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) ||
	    (uint64_t)st.st_size > HTTP_STATIC_MAX ||
	    (st.st_size && feed_read_at(fd, 0, (size_t)st.st_size, &b))) {
		close(fd);
		bft_buf_free(&b);
		return reply_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR,
				  "cannot read the file\n");
	}
	close(fd);
	ret = reply(c, MHD_HTTP_OK, content_type(name), b.data, b.len);
	bft_buf_free(&b);
	return ret;
}

static int cmp_trace(const void *a, const void *b)
{
	json_int_t x = json_integer_value(json_object_get(*(json_t **)a,
							  "trace"));
	json_int_t y = json_integer_value(json_object_get(*(json_t **)b,
							  "trace"));

	return x < y ? -1 : x > y;
}

/* trace-<N> (N decimal, no sign, no leading zero); -1 if not. */
static long trace_number(const char *s)
{
	char *end;
	long n;

	if (strncmp(s, "trace-", 6) || s[6] < '1' || s[6] > '9')
		return -1;
	errno = 0;
	n = strtol(s + 6, &end, 10);
	return errno || *end || n > 1000000000L ? -1 : n;
}

static enum MHD_Result serve_list(struct hq_http *h, struct MHD_Connection *c)
{
	json_t *list = json_array(), **v = NULL;
	char path[PATH_MAX + 300];
	struct dirent *e;
	enum MHD_Result ret;
	size_t n = 0, i;
	DIR *d;
	char *s;

	d = opendir(h->outdir);
	while (d && list && (e = readdir(d))) {
		long num = trace_number(e->d_name);
		json_error_t err;
		json_t *t, *meta;

		if (num < 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s/" LIVE_DIR, h->outdir,
			 e->d_name);
		if (access(path, R_OK | X_OK))
			continue;
		snprintf(path, sizeof(path), "%s/%s/" LIVE_DIR "/meta.json",
			 h->outdir, e->d_name);
		meta = json_load_file(path, 0, &err);
		t = json_pack("{s:I,s:o}", "trace", (json_int_t)num, "meta",
			      meta ? meta : json_null());
		if (t && !meta)
			json_object_set_new(t, "error", json_string(err.text));
		if (t)
			json_array_append_new(list, t);
	}
	if (d)
		closedir(d);
	if (!list)
		return reply_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "memory\n");
	/* sorted by number, not by readdir's order */
	n = json_array_size(list);
	v = calloc(n ? n : 1, sizeof(*v));
	for (i = 0; v && i < n; i++)
		v[i] = json_incref(json_array_get(list, i));
	if (v) {
		qsort(v, n, sizeof(*v), cmp_trace);
		json_array_clear(list);
		for (i = 0; i < n; i++)
			json_array_append_new(list, v[i]);
		free(v);
	}
	s = json_dumps(list, JSON_COMPACT);
	json_decref(list);
	if (!s)
		return reply_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "memory\n");
	ret = reply(c, MHD_HTTP_OK, "application/json", s, strlen(s));
	free(s);
	return ret;
}

/* A viewer's event stream, fed by feed (taken, NULL: no memory). */
static enum MHD_Result serve_feed(struct hq_http *h, struct MHD_Connection *c,
				  struct feed *feed)
{
	const union MHD_ConnectionInfo *ci;
	struct MHD_Response *r;
	struct viewer *v;
	int one = 1;
	enum MHD_Result ret;

	/*
	 * An event goes out at once: behind a small unacknowledged one (a
	 * names event just before it), Nagle would hold it until the
	 * browser's delayed ACK, 20 to 40 ms.
	 */
	ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	if (ci)
		setsockopt(ci->connect_fd, IPPROTO_TCP, TCP_NODELAY, &one,
			   sizeof(one));
	v = calloc(1, sizeof(*v));
	if (!v) {
		feed_free(feed);
		return MHD_NO;
	}
	v->h = h;
	v->conn = c;
	v->last_write_ms = hq_now_ms();
	v->feed = feed;
	r = v->feed ? MHD_create_response_from_callback(MHD_SIZE_UNKNOWN,
							64 * 1024, viewer_read,
							v, viewer_done) : NULL;
	if (!r) {
		viewer_free(v);
		return MHD_NO;
	}
	MHD_add_response_header(r, "Content-Type", "text/event-stream");
	MHD_add_response_header(r, "Cache-Control", "no-store");
	pthread_mutex_lock(&h->lock);
	v->next = h->viewers;
	h->viewers = v;
	pthread_mutex_unlock(&h->lock);
	ret = MHD_queue_response(c, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result serve_events(struct hq_http *h,
				    struct MHD_Connection *c, const char *num)
{
	char name[32], dir[PATH_MAX + 64];
	struct feed *feed;
	struct stat st;

	snprintf(name, sizeof(name), "trace-%s", num);
	if (trace_number(name) < 0)
		return reply_text(c, MHD_HTTP_NOT_FOUND, "no such trace\n");
	snprintf(dir, sizeof(dir), "%s/%s/" LIVE_DIR, h->outdir, name);
	if (stat(dir, &st) || !S_ISDIR(st.st_mode))
		return reply_text(c, MHD_HTTP_NOT_FOUND,
				  "no live data for this trace\n");
	/*
	 * Watched until the directory goes (one watch per trace).  Without a
	 * watch (at the limit), the fallback tick still comes.
	 */
	inotify_add_watch(h->inotify_fd, dir,
			  IN_MODIFY | IN_CREATE | IN_MOVED_TO);
	feed = feed_new(dir);
	if (feed && MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND,
						"stamps"))
		feed_stamps(feed);
	return serve_feed(h, c, feed);
}

static enum MHD_Result serve_counters(struct hq_http *h,
				      struct MHD_Connection *c)
{
	char path[PATH_MAX + 64];
	struct stat st;

	snprintf(path, sizeof(path), "%s/" HQ_COUNTERS_FILE, h->outdir);
	if (stat(path, &st) || !S_ISREG(st.st_mode))
		return reply_text(c, MHD_HTTP_NOT_FOUND,
				  "no counters recorded here\n");
	/* the file's directory: a new file replaces it */
	inotify_add_watch(h->inotify_fd, h->outdir,
			  IN_MODIFY | IN_CREATE | IN_MOVED_TO);
	return serve_feed(h, c, feed_new_lines(path, "counters"));
}

/*
 * Whether the Host header value host names this server: one of h's names,
 * and the port it listens on (none: 80).  Case does not matter in names.
 */
static bool host_ok(const struct hq_http *h, const char *host)
{
	char name[256];
	const char *end, *port;
	unsigned long p = 80;
	unsigned int i;
	size_t n;

	if (host[0] == '[') {
		end = strchr(host, ']');
		if (!end)
			return false;
		host++;
		port = end[1] == ':' ? end + 2 : end[1] ? NULL : "";
	} else {
		end = strchr(host, ':');
		port = end ? end + 1 : "";
		if (!end)
			end = host + strlen(host);
	}
	n = (size_t)(end - host);
	if (!port || !n || n >= sizeof(name))
		return false;
	if (*port) {
		char *e;

		if (port[strspn(port, "0123456789")] || strlen(port) > 5)
			return false;
		p = strtoul(port, &e, 10);
	}
	if (p != h->port)
		return false;
	memcpy(name, host, n);
	name[n] = 0;
	for (i = 0; i < h->nnames; i++)
		if (!strcasecmp(name, h->names[i]))
			return true;
	return false;
}

static enum MHD_Result refuse_host(struct MHD_Connection *c, const char *host)
{
	char text[512];

	snprintf(text, sizeof(text), "bfhq: Host \"%.200s\" is not a name of "
		 "this server; start bfhq with --http-host NAME to serve it "
		 "under that name\n", host);
	return reply_text(c, HTTP_MISDIRECTED, text);
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c,
			      const char *url, const char *method,
			      const char *version, const char *upload,
			      size_t *upload_size, void **con_cls)
{
	struct hq_http *h = cls;
	const char *events, *host;
	char num[16];
	size_t n;

	(void)version;
	(void)upload;
	/* no Host (HTTP/1.0) is no browser, the DNS-rebinding risk */
	host = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
					   MHD_HTTP_HEADER_HOST);
	if (host && !h->any_host && !host_ok(h, host))
		return refuse_host(c, host);
	if (strcmp(method, "GET") && strcmp(method, "HEAD"))
		return reply_text(c, MHD_HTTP_METHOD_NOT_ALLOWED,
				  "GET only\n");
	/* a GET has no body: answer on the first call */
	if (*upload_size)
		return reply_text(c, MHD_HTTP_BAD_REQUEST, "no body, please\n");
	(void)con_cls;
	if (!strcmp(url, "/"))
		return serve_static(h, c, "index.html");
	if (!strncmp(url, "/static/", 8))
		return serve_static(h, c, url + 8);
	if (!strcmp(url, "/api/traces"))
		return serve_list(h, c);
	if (!strcmp(url, "/api/counters/events"))
		return serve_counters(h, c);
	if (!strncmp(url, "/api/traces/", 12)) {
		events = strchr(url + 12, '/');
		n = events ? (size_t)(events - (url + 12)) : 0;
		if (events && !strcmp(events, "/events") && n &&
		    n < sizeof(num)) {
			memcpy(num, url + 12, n);
			num[n] = 0;
			return serve_events(h, c, num);
		}
	}
	return reply_text(c, MHD_HTTP_NOT_FOUND, "not found\n");
}

/* ---- start and stop ---- */

/* www/ next to the binary: installed, or in the source tree. */
static int find_www(char *out, size_t n)
{
	static const char *const rel[] = {
		"../share/bftrace/www",	/* $(PREFIX)/bin/bfhq */
		"../../user/hq/www",	/* build/user/bfhq */
	};
	const char *env = getenv("BFHQ_WWW");
	char exe[PATH_MAX], path[PATH_MAX + 64], *slash;
	ssize_t len;

	if (env && *env) {
		snprintf(out, n, "%s", env);
		return 0;
	}
	len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (len <= 0)
		return -1;
	exe[len] = 0;
	slash = strrchr(exe, '/');
	if (!slash)
		return -1;
	*slash = 0;
	for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s/index.html", exe, rel[i]);
		if (!access(path, R_OK)) {
			snprintf(out, n, "%s/%s", exe, rel[i]);
			return 0;
		}
	}
	return -1;
}

static void add_name(struct hq_http *h, const char *name)
{
	if (h->nnames < HTTP_MAX_NAMES && *name)
		snprintf(h->names[h->nnames++], sizeof(h->names[0]), "%s",
			 name);
}

struct hq_http *hq_http_start(const char *host, unsigned int port,
			      const char *outdir,
			      const struct hq_http_names *names)
{
	struct hq_http *h = calloc(1, sizeof(*h));
	struct sockaddr_storage sa;
	socklen_t salen = sizeof(sa);
	int fd = -1;

	if (!h)
		return NULL;
	h->inotify_fd = h->stop_fd = -1;
	add_name(h, "localhost");
	add_name(h, "127.0.0.1");
	add_name(h, "::1");
	/* a wildcard is no name: --http-host gives the machine's */
	if (strcmp(host, "0.0.0.0") && strcmp(host, "::"))
		add_name(h, host);
	for (unsigned int i = 0; names && i < names->n; i++)
		add_name(h, names->names[i]);
	h->any_host = names && names->any_host;
	if (find_www(h->www, sizeof(h->www))) {
		hq_log("--http: the page's files (www/index.html) are neither "
		       "installed next to bfhq nor in its source tree; set "
		       "BFHQ_WWW to their directory");
		goto fail;
	}
	snprintf(h->outdir, sizeof(h->outdir), "%s", outdir);
	pthread_mutex_init(&h->lock, NULL);
	h->inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	h->stop_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (h->inotify_fd < 0 || h->stop_fd < 0) {
		hq_log("--http: inotify or eventfd: %s", strerror(errno));
		goto fail;
	}
	fd = hq_listen_on(host, port);
	if (fd < 0)
		goto fail;
	if (!getsockname(fd, (struct sockaddr *)&sa, &salen))
		port = ntohs(sa.ss_family == AF_INET6 ?
			     ((struct sockaddr_in6 *)&sa)->sin6_port :
			     ((struct sockaddr_in *)&sa)->sin_port);
	h->port = port;
	h->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD |
				MHD_USE_POLL | MHD_ALLOW_SUSPEND_RESUME |
				MHD_USE_ERROR_LOG,
				0, NULL, NULL, handle, h,
				MHD_OPTION_LISTEN_SOCKET, fd,
				MHD_OPTION_CONNECTION_LIMIT, HTTP_MAX_CONNS,
				MHD_OPTION_CONNECTION_TIMEOUT, 120u,
				MHD_OPTION_END);
	if (!h->d) {
		hq_log("--http: libmicrohttpd did not start");
		goto fail;
	}
	if (pthread_create(&h->ticker, NULL, ticker, h)) {
		hq_log("--http: cannot start its thread");
		MHD_quiesce_daemon(h->d);
		MHD_stop_daemon(h->d);
		goto fail;
	}
	hq_log("live viewer on http://%s%s%s:%u/ (page from %s)",
	       strchr(host, ':') ? "[" : "", host, strchr(host, ':') ? "]" : "",
	       port, h->www);
	return h;
fail:
	if (fd >= 0)
		close(fd);
	if (h->inotify_fd >= 0)
		close(h->inotify_fd);
	if (h->stop_fd >= 0)
		close(h->stop_fd);
	pthread_mutex_destroy(&h->lock);
	free(h);
	return NULL;
}

unsigned int hq_http_port(const struct hq_http *h)
{
	return h->port;
}

unsigned int hq_http_viewers(struct hq_http *h)
{
	unsigned int n = 0;
	struct viewer *v;

	pthread_mutex_lock(&h->lock);
	for (v = h->viewers; v; v = v->next)
		n++;
	pthread_mutex_unlock(&h->lock);
	return n;
}

void hq_http_stop(struct hq_http *h)
{
	uint64_t one = 1;
	struct viewer *v;
	int fd;

	if (!h)
		return;
	pthread_mutex_lock(&h->lock);
	h->stopping = true;
	pthread_mutex_unlock(&h->lock);
	if (write(h->stop_fd, &one, sizeof(one)) != sizeof(one))
		hq_log("--http: cannot wake its thread: %s", strerror(errno));
	pthread_join(h->ticker, NULL);
	/*
	 * A suspended connection must be resumed to be closed: its reader
	 * then ends the stream.
	 */
	pthread_mutex_lock(&h->lock);
	for (v = h->viewers; v; v = v->next)
		if (v->suspended) {
			v->suspended = false;
			MHD_resume_connection(v->conn);
		}
	pthread_mutex_unlock(&h->lock);
	fd = MHD_quiesce_daemon(h->d);
	MHD_stop_daemon(h->d);
	if (fd >= 0)
		close(fd);
	close(h->inotify_fd);
	close(h->stop_fd);
	pthread_mutex_destroy(&h->lock);
	free(h);
}
