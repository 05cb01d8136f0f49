/* job_submit/autoheal: the plugin slurmctld loads. A thin C glue, built per Slurm release
 * against that release's internal headers (which are C): it turns Slurm's job into the plain
 * types of job_submit_glue.h, asks the C++ core (job_submit_core.cpp), and applies the verdict.
 * What differs between Slurm releases is in autoheal/slurm_compat.h, not here.
 *
 * Every entry point fails open: an internal error leaves the job as the user submitted it. */
#include <stdlib.h>
#include <string.h>

#include "slurm/slurm_errno.h"
#include "src/common/hostlist.h"
#include "src/common/slurm_xlator.h"
#include "src/common/xstring.h"
#include "src/slurmctld/slurmctld.h"

#include "autoheal/slurm_compat.h"
#include "job_submit_glue.h"

#define AUTOHEAL_EXPORT __attribute__((visibility("default")))

AUTOHEAL_EXPORT const char plugin_name[] = "autoheal job submit plugin";
AUTOHEAL_EXPORT const char plugin_type[] = "job_submit/autoheal";
AUTOHEAL_EXPORT const uint32_t plugin_version = SLURM_VERSION_NUMBER;

/* What the refusals return; sbatch prints the message, then this code's text. scontrol update
 * gets no message from a job_submit plugin in Slurm 22.05: it shows only this code's text, and
 * the message goes to slurmctld's log. */
static const int refusal_code = ESLURM_ACCESS_DENIED;

AUTOHEAL_EXPORT int init(void)
{
    autoheal_js_init();
    return SLURM_SUCCESS;
}

AUTOHEAL_EXPORT int fini(void)
{
    autoheal_js_fini();
    return SLURM_SUCCESS;
}

/* Slurm owns and frees exc_nodes (xfree): extend it with its own allocator. */
static void add_exclusions(job_desc_msg_t *job_desc, const char *names)
{
    if (job_desc->exc_nodes != NULL && job_desc->exc_nodes[0] != '\0') {
        xstrfmtcat(job_desc->exc_nodes, ",%s", names);
    } else {
        xfree(job_desc->exc_nodes);
        job_desc->exc_nodes = xstrdup(names);
    }
}

AUTOHEAL_EXPORT int job_submit(job_desc_msg_t *job_desc, uint32_t submit_uid, char **err_msg)
{
    struct autoheal_js_job job;
    struct autoheal_js_verdict verdict;
    int rc = SLURM_SUCCESS;

    if (job_desc == NULL)
        return SLURM_SUCCESS;
    memset(&job, 0, sizeof(job));
    job.name = job_desc->name;
    job.spank_env = (const char *const *)job_desc->spank_job_env;
    job.spank_env_size = job_desc->spank_job_env_size;
    job.req_nodes = job_desc->req_nodes;
    job.exc_nodes = job_desc->exc_nodes;
    job.submit_uid = submit_uid;
    if (autoheal_js_submit(&job, &verdict) != 0)
        return SLURM_SUCCESS;
    if (verdict.refusal != NULL) {
        if (err_msg != NULL) {
            xfree(*err_msg);
            *err_msg = xstrdup(verdict.refusal);
        }
        rc = refusal_code;
    } else {
        if (verdict.force_requeue)
            job_desc->requeue = 1;
        if (verdict.exclude != NULL)
            add_exclusions(job_desc, verdict.exclude);
    }
    autoheal_js_verdict_free(&verdict);
    return rc;
}

AUTOHEAL_EXPORT int job_modify(job_desc_msg_t *job_desc, job_record_t *job_ptr,
                               uint32_t submit_uid AUTOHEAL_JOB_MODIFY_ERR_MSG_PARAM)
{
    /* scontrol sends no spank_job_env; the values stored at submit are on the job record and
     * no update can change them. */
    if (job_desc == NULL || job_ptr == NULL || job_desc->requeue == NO_VAL16)
        return SLURM_SUCCESS;
    if (!autoheal_job_record_layout_ok(job_ptr)) {
        static int said; /* once: every update would say it again; updates run concurrently */
        if (!__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED)) {
            error("autoheal: job_submit: this plugin was built against another Slurm's job "
                  "record layout: job_modify checks are off (updates pass unchecked); rebuild "
                  "autoheal against this Slurm's exact source");
        }
        return SLURM_SUCCESS;
    }
    if (autoheal_js_modify((const char *const *)job_ptr->spank_job_env,
                           job_ptr->spank_job_env_size, job_desc->requeue != 0, job_ptr->job_id,
                           submit_uid) == 1)
        return refusal_code;
    return SLURM_SUCCESS;
}

/* The core's view of Slurm (job_submit_glue.h). */

void autoheal_js_log(enum autoheal_js_level level, const char *line)
{
    switch (level) {
    case AUTOHEAL_JS_ERROR:
        error("%s", line);
        break;
    case AUTOHEAL_JS_INFO:
        info("%s", line);
        break;
    default:
        debug("%s", line);
        break;
    }
}

/* job_submit() holds slurmctld's node read lock (job_submit.c asserts it): its node table may
 * be read there, and only there. find_node_record2 does not log. */
int autoheal_js_is_known_node(const char *name)
{
    char *copy = xstrdup(name); /* Slurm's prototype takes a char * */
    int known = find_node_record2(copy) != NULL;
    xfree(copy);
    return known;
}

int autoheal_js_node_count(void)
{
    return node_record_count;
}

int autoheal_js_expand_hostlist(const char *expression, int max,
                                void (*add)(void *ctx, const char *name), void *ctx)
{
    autoheal_hostlist_t list = hostlist_create(expression);
    char *host;

    if (list == NULL)
        return -1;
    if (hostlist_count(list) > max) {
        hostlist_destroy(list);
        return -1;
    }
    while ((host = hostlist_shift(list)) != NULL) {
        add(ctx, host);
        free(host); /* hostlist_shift's result comes from malloc */
    }
    hostlist_destroy(list);
    return 0;
}
