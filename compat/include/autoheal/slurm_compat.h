/* Where Slurm's releases differ, for the code behind the Slurm seam (remediation's adapter and
 * reboot request, the SPANK and job_submit plugins). This is the only file that tests
 * SLURM_VERSION_NUMBER: the same sources build against Slurm 22.05, 24.11 and 26.05 (and the
 * releases between, from Slurm's own change notes). C and C++ alike: the job_submit glue is C.
 *
 * 23.02  job_modify() takes a fourth argument, char **err_msg; the SLURM_PROTOCOL_SOCKET_IMPL_*
 *        receive errors are gone.
 * 23.11  hostlist_t is the struct (callers hold hostlist_t *); the topology reply is opaque
 *        (record_count 0): it is read by printing it; slurm_print_topo_info_msg takes a node list.
 *        24.11 cannot unpack it outside Slurm's tools (autoheal_topo_printable): scontrol prints.
 * 24.05  slurm_get_errno() gone (it was errno all along: callers read errno).
 * 25.05  slurm_load_topo() takes a topology name, slurm_print_topo_info_msg() a unit.
 * 25.11  job_desc_msg_t.job_id removed (step_id.job_id).
 * 26.05  slurm_load_job(), slurm_kill_job(), slurm_requeue() take a slurm_step_id_t;
 *        update_node_msg_t.reason_uid removed; slurm_free_ctl_conf() is slurm_free_conf(). */
#ifndef AUTOHEAL_SLURM_COMPAT_H
#define AUTOHEAL_SLURM_COMPAT_H

#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif
#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>
#ifdef __cplusplus
}
#endif

#define AUTOHEAL_SLURM_AT_LEAST(major, minor) \
    (SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(major, minor, 0))

/* A hostlist handle as slurm_hostlist_create() and the internal hostlist_create() return it. */
#if AUTOHEAL_SLURM_AT_LEAST(23, 11)
typedef hostlist_t *autoheal_hostlist_t;
#else
typedef hostlist_t autoheal_hostlist_t;
#endif

/* Whether an error code is one of the socket layer's receive errors that releases before 23.02
 * have (a lost connection, like SLURM_COMMUNICATIONS_RECEIVE_ERROR). */
static inline int autoheal_slurm_is_socket_receive_error(int code) {
#if AUTOHEAL_SLURM_AT_LEAST(23, 2)
    (void)code;
    return 0;
#else
    return code == SLURM_PROTOCOL_SOCKET_IMPL_ZERO_RECV_LENGTH ||
           code == SLURM_PROTOCOL_SOCKET_IMPL_NEGATIVE_RECV_LENGTH ||
           code == SLURM_PROTOCOL_SOCKET_IMPL_NOT_ALL_DATA_SENT;
#endif
}

/* What the job id argument of slurm_load_job(), slurm_kill_job() and slurm_requeue() is. */
#if AUTOHEAL_SLURM_AT_LEAST(26, 5)
static inline slurm_step_id_t autoheal_job_id_arg(uint32_t job_id) {
    slurm_step_id_t id;
    id.sluid = 0;
    id.job_id = job_id;
    id.step_het_comp = NO_VAL;
    id.step_id = NO_VAL;
    return id;
}
#else
static inline uint32_t autoheal_job_id_arg(uint32_t job_id) { return job_id; }
#endif

/* Names the job a slurm_update_job() request is for. */
static inline void autoheal_job_desc_set_id(job_desc_msg_t *desc, uint32_t job_id) {
#if AUTOHEAL_SLURM_AT_LEAST(25, 11)
    desc->step_id.job_id = job_id;
#else
    desc->job_id = job_id;
#endif
}

/* Who set a node's reason (dropped in 26.05: slurmctld takes it from the request's credential). */
static inline void autoheal_update_node_set_reason_uid(update_node_msg_t *msg, uint32_t uid) {
#if AUTOHEAL_SLURM_AT_LEAST(26, 5)
    (void)msg;
    (void)uid;
#else
    msg->reason_uid = uid;
#endif
}

/* Frees what slurm_load_ctl_conf() returned (26.05 renamed slurm_free_ctl_conf to
 * slurm_free_conf). */
static inline void autoheal_free_ctl_conf(slurm_conf_t *conf) {
#if AUTOHEAL_SLURM_AT_LEAST(26, 5)
    slurm_free_conf(conf);
#else
    slurm_free_ctl_conf(conf);
#endif
}

/* Loads the cluster's (default) topology. */
static inline int autoheal_load_topo(topo_info_response_msg_t **msg) {
#if AUTOHEAL_SLURM_AT_LEAST(25, 5)
    return slurm_load_topo(msg, NULL);
#else
    return slurm_load_topo(msg);
#endif
}

/* Whether a loaded topology can be printed. From 23.11 the reply is unpacked by the topology
 * plugin, which libslurm loads into the caller: 24.11's topology_tree.so needs symbols only
 * Slurm's own tools carry (libslurmfull's topo_conf), so in any other program its dlopen fails,
 * the reply comes back without its data, and printing it dereferences NULL. Then the adapter
 * has `scontrol show topology` print it (slurm_topology.h). */
static inline int autoheal_topo_printable(const topo_info_response_msg_t *msg) {
#if AUTOHEAL_SLURM_AT_LEAST(25, 5)
    return msg->topo_info != NULL;
#elif AUTOHEAL_SLURM_AT_LEAST(23, 11)
    return msg->topo_info != NULL && msg->topo_info->data != NULL;
#else
    (void)msg;
    return 1;
#endif
}

/* Prints every record of a loaded topology, one a line ("SwitchName=... Level=... Nodes=..." for
 * a tree, "BlockName=... Nodes=..." for blocks): the one form every release can give. */
static inline void autoheal_print_topo(FILE *out, topo_info_response_msg_t *msg) {
#if AUTOHEAL_SLURM_AT_LEAST(25, 5)
    slurm_print_topo_info_msg(out, msg, NULL, NULL, 1);
#elif AUTOHEAL_SLURM_AT_LEAST(23, 11)
    slurm_print_topo_info_msg(out, msg, NULL, 1);
#else
    slurm_print_topo_info_msg(out, msg, 1);
#endif
}

/* job_submit plugins: job_modify()'s parameters after submit_uid. */
#if AUTOHEAL_SLURM_AT_LEAST(23, 2)
#define AUTOHEAL_JOB_MODIFY_ERR_MSG_PARAM , char **err_msg
#else
#define AUTOHEAL_JOB_MODIFY_ERR_MSG_PARAM
#endif

#ifdef _HAVE_SLURMCTLD_H
/* slurmctld's job record is its internal ABI: a job_submit plugin must be built against the very
 * release it is loaded into. Slurm checks only the version number the plugin declares (from the
 * public headers), so a plugin built from a neighbouring release's source (the exact one not to be
 * had) loads and reads the record at the wrong offsets — garbage pointers inside slurmctld.
 * From 25.11 on the record begins with its slurm_step_id_t, a public type, which Slurm itself
 * relies on (%pJ): a record whose job id there and at the compiled offset disagree was laid out
 * by another build, and the plugin must not read it. Before 25.11 there is no such check: 1. */
static inline int autoheal_job_record_layout_ok(const job_record_t *job_ptr) {
#if AUTOHEAL_SLURM_AT_LEAST(25, 11)
    return ((const slurm_step_id_t *)job_ptr)->job_id == job_ptr->job_id;
#else
    (void)job_ptr;
    return 1;
#endif
}
#endif /* _HAVE_SLURMCTLD_H */

#endif /* AUTOHEAL_SLURM_COMPAT_H */
