// SPDX-License-Identifier: MIT
/*
 * Profiles: "key = value" lines, '#' to the end of a line is a comment.
 * A value is a number or a fraction of two ("64/67"); every key is known
 * and given once, every value finite and not negative, so that a typo in
 * a profile is an error, not a machine without that part.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "builtin.h"
#include "model.h"

#define FIELD(k)                                    \
	{                                           \
#k, offsetof(struct fcm_profile, k) \
	}

static const struct {
	const char *key;
	size_t off;
} fields[] = {
	FIELD(line_gbps),      FIELD(encoding),	    FIELD(framing),
	FIELD(pkt_bytes),      FIELD(pkt_payload),  FIELD(link_ns),
	FIELD(router_cycles),  FIELD(router_mhz),   FIELD(router_bits),
	FIELD(endpoint_ns),    FIELD(endpoint_mhz), FIELD(endpoint_bits),
	FIELD(pcie_lane_gbps), FIELD(pcie_lanes),   FIELD(pcie_mps),
	FIELD(pcie_tlp_bytes), FIELD(pcie_ns),	    FIELD(desc_bytes),
	FIELD(hbm_mhz),	       FIELD(hbm_bits),	    FIELD(hbm_channels),
	FIELD(ls_mhz),	       FIELD(ls_bits),	    FIELD(ls_step_ns),
	FIELD(sort_w),	       FIELD(sort_m),	    FIELD(sort_mhz),
	FIELD(sort_node_gbs),  FIELD(sort_eff),	    FIELD(nodes),
	FIELD(link_credits),
};
#define NFIELDS (sizeof(fields) / sizeof(fields[0]))

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

static char *trim(char *s)
{
	char *e;

	while (*s == ' ' || *s == '\t')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
		*--e = '\0';
	return s;
}

/* A number, or a fraction "a/b". RETURN VALUE: true if good. */
static bool parse_value(const char *s, double *v)
{
	char *end;
	double a, b;

	errno = 0;
	a = strtod(s, &end);
	if (end == s || errno)
		return false;
	if (*end == '/') {
		s = end + 1;
		b = strtod(s, &end);
		if (end == s || errno || !(b > 0))
			return false;
		a /= b;
	}
	if (*end || !isfinite(a) || a < 0)
		return false;
	*v = a;
	return true;
}

int fcm_profile_parse(struct fcm_profile *p, const char *name, const char *text,
		      char *err, size_t errlen)
{
	bool seen[NFIELDS] = { false };
	char line[256], *s, *eq, *key, *val, *hash;
	const char *nl;
	unsigned int lineno = 0;
	size_t len, i;

	if (!p || !name || !text)
		return fail(err, errlen, "no profile");
	memset(p, 0, sizeof(*p));
	if (strlen(name) >= sizeof(p->name))
		return fail(err, errlen, "profile name '%s' too long", name);
	strcpy(p->name, name);
	while (*text) {
		lineno++;
		nl = strchr(text, '\n');
		len = nl ? (size_t)(nl - text) : strlen(text);
		if (len >= sizeof(line))
			return fail(err, errlen, "%s:%u: line too long", name,
				    lineno);
		memcpy(line, text, len);
		line[len] = '\0';
		text += len + (nl ? 1 : 0);
		hash = strchr(line, '#');
		if (hash)
			*hash = '\0';
		s = trim(line);
		if (!*s)
			continue;
		eq = strchr(s, '=');
		if (!eq)
			return fail(err, errlen,
				    "%s:%u: expected 'key = value'", name,
				    lineno);
		*eq = '\0';
		key = trim(s);
		val = trim(eq + 1);
		for (i = 0; i < NFIELDS; i++)
			if (!strcmp(key, fields[i].key))
				break;
		if (i == NFIELDS)
			return fail(err, errlen, "%s:%u: unknown key '%s'",
				    name, lineno, key);
		if (seen[i])
			return fail(err, errlen, "%s:%u: '%s' given twice",
				    name, lineno, key);
		if (!parse_value(val, (double *)((char *)p + fields[i].off)))
			return fail(
				err, errlen,
				"%s:%u: bad value '%s' for '%s' (a number >= 0 or a/b)",
				name, lineno, val, key);
		seen[i] = true;
	}
	if (p->pkt_payload > p->pkt_bytes)
		return fail(err, errlen, "%s: pkt_payload above pkt_bytes",
			    name);
	if (p->line_gbps > 0 && !(p->pkt_payload > 0))
		return fail(err, errlen,
			    "%s: a link needs pkt_bytes and pkt_payload", name);
	if (p->encoding > 1 || p->framing > 1)
		return fail(err, errlen,
			    "%s: encoding and framing are at most 1", name);
	return 0;
}

int fcm_profile_load(struct fcm_profile *p, const char *spec, char *err,
		     size_t errlen)
{
	char path[4096], name[FCM_NAME_MAX], *text = NULL;
	const char *dir, *base, *dot;
	size_t len, i;
	FILE *f;
	long size;
	int ret;

	if (!p || !spec || !*spec)
		return fail(err, errlen, "no profile named");
	len = strlen(spec);
	dir = getenv("FPGACOMM_MODEL_DIR");
	if (strchr(spec, '/') ||
	    (len > 5 && !strcmp(spec + len - 5, ".prof"))) {
		if (len >= sizeof(path))
			return fail(err, errlen, "profile path too long");
		strcpy(path, spec);
	} else if (dir && *dir) {
		if ((size_t)snprintf(path, sizeof(path), "%s/%s.prof", dir,
				     spec) >= sizeof(path))
			return fail(err, errlen, "profile path too long");
	} else {
		/* a name: the shipped profile of that name, built in */
		for (i = 0; fcm_builtins[i].name; i++)
			if (!strcmp(spec, fcm_builtins[i].name))
				return fcm_profile_parse(p, spec,
							 fcm_builtins[i].text,
							 err, errlen);
		if (err && errlen)
			snprintf(
				err, errlen,
				"no profile '%s' (known: circus, peach2, hbm2, "
				"optweb, coe; or a file)",
				spec);
		return -ENOENT;
	}
	base = strrchr(path, '/');
	base = base ? base + 1 : path;
	dot = strstr(base, ".prof");
	len = dot ? (size_t)(dot - base) : strlen(base);
	if (len >= sizeof(name))
		len = sizeof(name) - 1;
	memcpy(name, base, len);
	name[len] = '\0';
	f = fopen(path, "r");
	if (!f) {
		ret = -errno;
		if (err && errlen)
			snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return ret;
	}
	if (fseek(f, 0, SEEK_END) || (size = ftell(f)) < 0 ||
	    size > (1 << 20) || fseek(f, 0, SEEK_SET)) {
		fclose(f);
		return fail(err, errlen, "%s: not a readable profile", path);
	}
	text = malloc((size_t)size + 1);
	if (!text) {
		fclose(f);
		return -ENOMEM;
	}
	if (fread(text, 1, (size_t)size, f) != (size_t)size) {
		free(text);
		fclose(f);
		return fail(err, errlen, "%s: read failed", path);
	}
	fclose(f);
	text[size] = '\0';
	if (strlen(text) != (size_t)size)
		ret = fail(err, errlen, "%s: a NUL byte in a profile", path);
	else
		ret = fcm_profile_parse(p, name, text, err, errlen);
	free(text);
	return ret;
}

int fcm_profile_from_env(struct fcm_profile *p)
{
	static int said;
	const char *spec = getenv("FPGACOMM_EMU_MODEL");
	char err[512];
	int ret;

	if (!spec || !*spec)
		return 1;
	ret = fcm_profile_load(p, spec, err, sizeof(err));
	if (ret && !__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
		fprintf(stderr, "fpgacomm: FPGACOMM_EMU_MODEL=%s: %s\n", spec,
			err);
	return ret;
}
