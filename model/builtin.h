/* SPDX-License-Identifier: MIT */
/* Private to model/: the shipped profiles, built in (scripts/embed-profiles.sh). */
#ifndef FCM_BUILTIN_H
#define FCM_BUILTIN_H

struct fcm_builtin {
	const char *name;
	const char *text;
};

/* Ends with { NULL, NULL }. */
extern const struct fcm_builtin fcm_builtins[];

#endif /* FCM_BUILTIN_H */
