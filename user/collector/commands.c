// SPDX-License-Identifier: GPL-2.0
/*
 * HQ's commands: the configuration (the handshake's and a later one), the
 * mode commands (start, stop, pause, suspend and their undoing) turned
 * into the source's, and the lease that keeps HQ's pause from outliving
 * HQ.  hqlink.c brings the bytes and calls coll_commands() when whole
 * messages may be there; the loop calls hq_pause_guard().
 */
#include <stdio.h>
#include <string.h>

#include "capture/bft_nl.h"
#include "collector.h"

static void command_mode(struct coll *c, int cmd)
{
	int e = source_mode_cmd(c, cmd);

	if (c->o.verbose || e)
		coll_log("HQ: %s%s%s", bft_cmd_name(cmd), e ? ": " : "",
			 e ? strerror(-e) : "");
}

int coll_apply_config(struct coll *c, const struct bfp_config *cfg,
		      char *err, size_t errlen)
{
	if (cfg->data_senders < 1 || cfg->data_senders > COLL_MAX_SENDERS) {
		snprintf(err, errlen, "numDataSenders %d is not in 1..%d",
			 cfg->data_senders, COLL_MAX_SENDERS);
		return -EPROTO;
	}
	if (cfg->heartbeat_ms <= 0) {
		snprintf(err, errlen, "heartbeatInterval %d is not positive",
			 cfg->heartbeat_ms);
		return -EPROTO;
	}
	bfp_config_free(&c->config);
	if (bfp_config_copy(&c->config, cfg)) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	return methods_set_filter(&c->methods, &c->config, err, errlen);
}

static void command_run(struct coll *c, const struct bfp_msg *m)
{
	char err[160];

	switch (m->id) {
	case BFP_CONFIG:
		/* re-configuration: only before start (notes §4.3) */
		if (c->started) {
			coll_log("HQ sent a configuration after start: ignored");
			break;
		}
		if (m->config->data_senders != c->config.data_senders ||
		    m->config->run_id != c->config.run_id)
			coll_log("HQ re-configured the run id or the data "
				 "connections: kept as they are");
		{
			struct bfp_config keep = *m->config;

			keep.run_id = c->config.run_id;
			keep.data_senders = c->config.data_senders;
			if (coll_apply_config(c, &keep, err, sizeof(err)))
				hq_protocol_error(c, err);
		}
		break;
	case BFP_START: {
		bool for_hq = c->suspended_for_hq;

		c->suspended_for_hq = false;
		if (for_hq && source_mode(c) == BFT_MODE_SUSPENDED) {
			/* HQ is back: recording resumes, unless HQ said not */
			if (!c->hq_wants_suspend)
				command_mode(c, BFT_CMD_UNSUSPEND);
		} else if (source_mode(c) == BFT_MODE_INITIALIZING ||
			   source_mode(c) == BFT_MODE_SHUTTING_DOWN) {
			command_mode(c, BFT_CMD_START);
			if (c->hq_wants_suspend &&
			    source_mode(c) == BFT_MODE_TRACING)
				command_mode(c, BFT_CMD_SUSPEND);
		} else if (c->o.verbose) {
			coll_log("HQ: start: already %s",
				 bft_mode_name(source_mode(c)));
		}
		c->started = true;
		coll_ready(c);
		break;
	}
	case BFP_STOP:
		command_mode(c, BFT_CMD_STOP);
		if (!c->o.no_stop) {
			coll_log("HQ: stop: finishing");
			c->stopping = true;
			source_drain(c);
		}
		break;
	case BFP_SUSPEND:
		c->hq_wants_suspend = true;
		if (c->started)
			command_mode(c, BFT_CMD_SUSPEND);
		break;
	case BFP_UNSUSPEND:
		c->hq_wants_suspend = false;
		if (c->started)
			command_mode(c, BFT_CMD_UNSUSPEND);
		break;
	case BFP_PAUSE:
		/* again while it holds: a renewal of the lease, nothing more */
		if (c->paused_for_hq && source_mode(c) == BFT_MODE_PAUSED)
			break;
		command_mode(c, BFT_CMD_PAUSE);
		c->paused_for_hq = source_mode(c) == BFT_MODE_PAUSED;
		c->pause_session = c->session;
		break;
	case BFP_UNPAUSE:
		c->paused_for_hq = false;
		/* the lease may have run out and unpaused already */
		if (source_mode(c) != BFT_MODE_PAUSED) {
			if (c->o.verbose)
				coll_log("HQ: unpause: already %s",
					 bft_mode_name(source_mode(c)));
			break;
		}
		command_mode(c, BFT_CMD_UNPAUSE);
		break;
	case BFP_ERROR:
		coll_log("HQ reports an error: %s", m->str);
		hq_peer_error(c);
		break;
	default:
		hq_protocol_error(c, "unexpected control message");
		break;
	}
}

void coll_commands(struct coll *c)
{
	struct bfp_msg m = { 0 };
	struct bfp_error err;
	size_t pos = 0;

	while (c->hq == HQ_UP && pos < c->ctl_in.len) {
		int r = bfp_decode(c->ctl_in.data + pos, c->ctl_in.len - pos,
				   c->o.protocol, BFP_CTX_AGENT_CONTROL, &m,
				   &err);

		if (r == 0)
			break;
		if (r < 0) {
			hq_protocol_error(c, err.msg);
			break;
		}
		pos += (size_t)r;
		c->hq_heard_ms = coll_now_ms();
		command_run(c, &m);
	}
	bfp_msg_free(&m);
	if (c->hq == HQ_UP)
		bft_buf_consume(&c->ctl_in, pos);
}

void hq_control_feed(struct coll *c, const void *p, size_t n)
{
	if (bft_buf_append(&c->ctl_in, p, n)) {
		coll_log("out of memory for HQ's control input");
		return;
	}
	coll_commands(c);
}

uint64_t hq_pause_deadline(const struct coll *c)
{
	if (!c->paused_for_hq || !c->o.pause_lease || c->hq != HQ_UP)
		return 0;
	return c->hq_heard_ms +
	       (uint64_t)c->o.pause_lease * (uint64_t)c->config.heartbeat_ms;
}

void hq_pause_release(struct coll *c, const char *why)
{
	int e;

	if (!c->paused_for_hq)
		return;
	c->paused_for_hq = false;
	/* someone else (bfctl, a stop) moved the mode on meanwhile */
	if (source_mode(c) != BFT_MODE_PAUSED)
		return;
	e = source_mode_cmd(c, BFT_CMD_UNPAUSE);
	coll_log("%s while HQ held the targets paused: %s", why,
		 e ? "unpausing them failed" : "unpaused them");
}

void hq_pause_guard(struct coll *c)
{
	uint64_t until = hq_pause_deadline(c);
	char why[96];

	if (!c->paused_for_hq)
		return;
	/* a new session is another connection: the one that paused is gone */
	if (c->hq != HQ_UP || c->session != c->pause_session) {
		hq_pause_release(c, "HQ's control connection is gone");
	} else if (until && coll_now_ms() >= until) {
		snprintf(why, sizeof(why), "HQ said nothing for %u heartbeat "
			 "intervals (%llu ms)", c->o.pause_lease,
			 (unsigned long long)(coll_now_ms() - c->hq_heard_ms));
		hq_pause_release(c, why);
	}
}
