/* Private: libpq's functions, loaded on first use (include/airlock/dl.h),
 * for the schema's migrations (pg.c) and the seam's driver (db.c). */
#ifndef AL_PQ_H
#define AL_PQ_H

#include <libpq-fe.h>

#include "airlock/error.h"

struct al_pq {
	PGconn *(*connectdb)(const char *conninfo);
	ConnStatusType (*status)(const PGconn *conn);
	char *(*error_message)(const PGconn *conn);
	void (*finish)(PGconn *conn);
	void (*reset)(PGconn *conn);
	PGTransactionStatusType (*transaction_status)(const PGconn *conn);
	PQnoticeProcessor (*set_notice_processor)(PGconn *conn, PQnoticeProcessor proc, void *arg);
	PGresult *(*exec)(PGconn *conn, const char *query);
	PGresult *(*exec_params)(PGconn *conn, const char *command, int nParams,
				 const Oid *paramTypes, const char *const *paramValues,
				 const int *paramLengths, const int *paramFormats,
				 int resultFormat);
	PGresult *(*prepare)(PGconn *conn, const char *stmtName, const char *query, int nParams,
			     const Oid *paramTypes);
	PGresult *(*exec_prepared)(PGconn *conn, const char *stmtName, int nParams,
				   const char *const *paramValues, const int *paramLengths,
				   const int *paramFormats, int resultFormat);
	ExecStatusType (*result_status)(const PGresult *res);
	char *(*result_error_field)(const PGresult *res, int fieldcode);
	void (*clear)(PGresult *res);
	int (*ntuples)(const PGresult *res);
	int (*nfields)(const PGresult *res);
	char *(*getvalue)(const PGresult *res, int tup_num, int field_num);
	int (*getlength)(const PGresult *res, int tup_num, int field_num);
	int (*getisnull)(const PGresult *res, int tup_num, int field_num);
	Oid (*ftype)(const PGresult *res, int field_num);
	char *(*cmd_status)(PGresult *res);
	char *(*cmd_tuples)(PGresult *res);
	/* pipeline mode (libpq 14): a statement's own transaction in one trip */
	int (*enter_pipeline_mode)(PGconn *conn);
	int (*exit_pipeline_mode)(PGconn *conn);
	int (*pipeline_sync)(PGconn *conn);
	int (*send_query_params)(PGconn *conn, const char *command, int nParams,
				 const Oid *paramTypes, const char *const *paramValues,
				 const int *paramLengths, const int *paramFormats,
				 int resultFormat);
	int (*send_prepare)(PGconn *conn, const char *stmtName, const char *query, int nParams,
			    const Oid *paramTypes);
	int (*send_query_prepared)(PGconn *conn, const char *stmtName, int nParams,
				   const char *const *paramValues, const int *paramLengths,
				   const int *paramFormats, int resultFormat);
	PGresult *(*get_result)(PGconn *conn);
};
extern struct al_pq al_pq;

/* Load libpq once (thread-safe); its error every time after a failure. */
int al_pq__load(struct al_error *err);

#endif
