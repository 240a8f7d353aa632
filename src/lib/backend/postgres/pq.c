/* libpq, loaded on first use (pq.h). */
#include <pthread.h>

#include "airlock/dl.h"
#include "pq.h"
#include "util.h"

struct al_pq al_pq;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static struct al_error load_err;
static int load_rc;

static void load(void)
{
	const struct dl_sym syms[] = {
		{ "PQconnectdb", DL_SLOT(al_pq, connectdb) },
		{ "PQstatus", DL_SLOT(al_pq, status) },
		{ "PQerrorMessage", DL_SLOT(al_pq, error_message) },
		{ "PQfinish", DL_SLOT(al_pq, finish) },
		{ "PQreset", DL_SLOT(al_pq, reset) },
		{ "PQtransactionStatus", DL_SLOT(al_pq, transaction_status) },
		{ "PQsetNoticeProcessor", DL_SLOT(al_pq, set_notice_processor) },
		{ "PQexec", DL_SLOT(al_pq, exec) },
		{ "PQexecParams", DL_SLOT(al_pq, exec_params) },
		{ "PQprepare", DL_SLOT(al_pq, prepare) },
		{ "PQexecPrepared", DL_SLOT(al_pq, exec_prepared) },
		{ "PQresultStatus", DL_SLOT(al_pq, result_status) },
		{ "PQresultErrorField", DL_SLOT(al_pq, result_error_field) },
		{ "PQclear", DL_SLOT(al_pq, clear) },
		{ "PQntuples", DL_SLOT(al_pq, ntuples) },
		{ "PQnfields", DL_SLOT(al_pq, nfields) },
		{ "PQgetvalue", DL_SLOT(al_pq, getvalue) },
		{ "PQgetlength", DL_SLOT(al_pq, getlength) },
		{ "PQgetisnull", DL_SLOT(al_pq, getisnull) },
		{ "PQftype", DL_SLOT(al_pq, ftype) },
		{ "PQcmdStatus", DL_SLOT(al_pq, cmd_status) },
		{ "PQcmdTuples", DL_SLOT(al_pq, cmd_tuples) },
		{ "PQenterPipelineMode", DL_SLOT(al_pq, enter_pipeline_mode) },
		{ "PQexitPipelineMode", DL_SLOT(al_pq, exit_pipeline_mode) },
		{ "PQpipelineSync", DL_SLOT(al_pq, pipeline_sync) },
		{ "PQsendQueryParams", DL_SLOT(al_pq, send_query_params) },
		{ "PQsendPrepare", DL_SLOT(al_pq, send_prepare) },
		{ "PQsendQueryPrepared", DL_SLOT(al_pq, send_query_prepared) },
		{ "PQgetResult", DL_SLOT(al_pq, get_result) },
	};
	load_rc = dl_load("libpq.so.5", "libpq5", syms, ARRAY_SIZE(syms), &load_err);
}

int al_pq__load(struct al_error *err)
{
	pthread_once(&once, load);
	if (load_rc < 0 && err)
		*err = load_err;
	return load_rc;
}
