/* The seam inside job_submit/autoheal between its C glue (job_submit_autoheal.c: Slurm's internal
 * headers, which are C, built per Slurm release) and its C++ core (job_submit_core.cpp: the
 * policy, its reloading, the decisions). Only plain C types cross it, so the core never sees a
 * Slurm structure and the glue is the only file that changes with Slurm's ABI.
 *
 * Every core function catches its own exceptions and fails open: an internal error is logged
 * and leaves the job as the user submitted it. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A submitted job as the core sees it; everything borrowed for the call. */
struct autoheal_js_job {
    const char *name;             /* may be NULL */
    const char *const *spank_env; /* the SPANK plugin's values, without the SPANK_ prefix */
    size_t spank_env_size;
    const char *req_nodes; /* hostlist expressions, may be NULL */
    const char *exc_nodes;
    uint32_t submit_uid;
};

/* What the core decided. Its strings come from malloc; autoheal_js_verdict_free frees them. */
struct autoheal_js_verdict {
    char *refusal; /* not NULL: refuse the job, with this message for the user */
    int force_requeue;
    char *exclude; /* not NULL: node names to add to exc_nodes, comma-separated */
};

/* init()/fini(): start and stop the policy's reloading. 0, or -1 after logging. */
int autoheal_js_init(void);
int autoheal_js_fini(void);
/* 0 with *verdict filled (zeroed first), or -1 after an internal error was logged. Called under
 * slurmctld's node read lock: autoheal_js_is_known_node may be called from it. */
int autoheal_js_submit(const struct autoheal_js_job *job, struct autoheal_js_verdict *verdict);
void autoheal_js_verdict_free(struct autoheal_js_verdict *verdict);
/* job_modify: 1 when the update is refused (logged), 0 when accepted, -1 after an internal error.
 * stored_env: the values the job was submitted with (the job record's spank_job_env). */
int autoheal_js_modify(const char *const *stored_env, size_t stored_env_size, int requeue_requested,
                       uint32_t job_id, uint32_t submit_uid);

/* Provided by the glue (Slurm's side), called by the core. */
enum autoheal_js_level { AUTOHEAL_JS_ERROR, AUTOHEAL_JS_INFO, AUTOHEAL_JS_DEBUG };
/* One line into slurmctld's log at that level. */
void autoheal_js_log(enum autoheal_js_level level, const char *line);
/* Whether slurmctld knows a node by this name; only from autoheal_js_submit. */
int autoheal_js_is_known_node(const char *name);
/* slurmctld's node count; only from autoheal_js_submit. */
int autoheal_js_node_count(void);
/* Expands a hostlist expression, calling add(ctx, name) for each name in order. 0, or -1 when it
 * does not parse or holds more than max names (then add was not called). */
int autoheal_js_expand_hostlist(const char *expression, int max,
                                void (*add)(void *ctx, const char *name), void *ctx);

#ifdef __cplusplus
}
#endif
