-- domains.sql: the value types (domains) that columns across the tables share, with their checks,
-- and the functions those checks call (headers, secret names).
--
-- Generated, do not edit: made by scripts/schema.sh from a database migrated through
-- 0038_keeper_and_prober_read_only_what_holds_back.sql.
-- To change the schema, add a migration to sql/, then regenerate with: scripts/schema.sh
-- For reading only: jobctl migrate builds the schema from sql/NNNN_*.sql; this file is never applied.

--
-- Name: destination_key; Type: DOMAIN
--

CREATE DOMAIN courier.destination_key AS text
	CONSTRAINT jobs_destination_check CHECK (((length(VALUE) >= 1) AND (length(VALUE) <= 300)));


--
-- Name: destination_key jobs_destination_characters_check; Type: CHECK CONSTRAINT
--

ALTER DOMAIN courier.destination_key
    ADD CONSTRAINT jobs_destination_characters_check CHECK ((VALUE !~ '[\x01-\x20\x7f]'::text)) NOT VALID;


--
-- Name: header_map; Type: DOMAIN
--

CREATE DOMAIN courier.header_map AS jsonb
	CONSTRAINT jobs_headers_check CHECK ((jsonb_typeof(VALUE) = 'object'::text));


--
-- Name: header_map jobs_headers_rules_check; Type: CHECK CONSTRAINT
--

ALTER DOMAIN courier.header_map
    ADD CONSTRAINT jobs_headers_rules_check CHECK (((VALUE = '{}'::jsonb) OR courier.headers_plainly_valid(VALUE) OR courier.check_headers(VALUE))) NOT VALID;


--
-- Name: http_method; Type: DOMAIN
--

CREATE DOMAIN courier.http_method AS text
	CONSTRAINT jobs_method_check CHECK (((VALUE = ANY (ARRAY['GET'::text, 'POST'::text, 'PUT'::text, 'PATCH'::text, 'DELETE'::text, 'HEAD'::text, 'OPTIONS'::text])) OR (VALUE ~ '^[A-Z][A-Z0-9_-]{0,19}$'::text)));


--
-- Name: http_url; Type: DOMAIN
--

CREATE DOMAIN courier.http_url AS text
	CONSTRAINT jobs_url_check CHECK (((length(VALUE) <= 8192) AND (lower(split_part(VALUE, '://'::text, 1)) = ANY (ARRAY['http'::text, 'https'::text])) AND ("left"(split_part(VALUE, '://'::text, 2), 1) <> ALL (ARRAY[''::text, '/'::text, '?'::text, '#'::text]))));


--
-- Name: http_url jobs_url_characters_check; Type: CHECK CONSTRAINT
--

ALTER DOMAIN courier.http_url
    ADD CONSTRAINT jobs_url_characters_check CHECK ((VALUE !~ '[\x01-\x20\x7f]'::text)) NOT VALID;


--
-- Name: idempotency_key; Type: DOMAIN
--

CREATE DOMAIN courier.idempotency_key AS text
	CONSTRAINT jobs_idempotency_key_check CHECK (((length(VALUE) >= 1) AND (length(VALUE) <= 255)));


--
-- Name: job_kind; Type: DOMAIN
--

CREATE DOMAIN courier.job_kind AS text
	CONSTRAINT jobs_kind_check CHECK (((VALUE = 'http'::text) OR ((VALUE ~ '^[a-z]'::text) AND (VALUE !~ '[^a-z0-9_.-]'::text) AND (length(VALUE) <= 64))));


--
-- Name: media_type; Type: DOMAIN
--

CREATE DOMAIN courier.media_type AS text
	CONSTRAINT jobs_expect_content_type_check CHECK ((VALUE ~* '^[a-z0-9!#$&^_.+-]+/[a-z0-9!#$&^_.+*-]+$'::text));


--
-- Name: queue_name; Type: DOMAIN
--

CREATE DOMAIN courier.queue_name AS text
	CONSTRAINT jobs_queue_check CHECK (((VALUE !~ '[^A-Za-z0-9_.:-]'::text) AND ((length(VALUE) >= 1) AND (length(VALUE) <= 64))));


--
-- Name: request_body; Type: DOMAIN
--

CREATE DOMAIN courier.request_body AS text
	CONSTRAINT jobs_body_check CHECK ((octet_length(VALUE) <= 16777216));


--
-- Name: secret_name; Type: DOMAIN
--

CREATE DOMAIN courier.secret_name AS text
	CONSTRAINT jobs_signing_secret_check CHECK (courier.is_secret_name(VALUE));


--
-- Name: unique_key; Type: DOMAIN
--

CREATE DOMAIN courier.unique_key AS text
	CONSTRAINT jobs_unique_key_check CHECK (((length(VALUE) >= 1) AND (length(VALUE) <= 255)));


--
-- Name: check_headers(jsonb); Type: FUNCTION
--

CREATE FUNCTION courier.check_headers(p_headers jsonb) RETURNS boolean
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
    AS $_$
declare
    v_name  text;
    v_value jsonb;
    v_text  text;
    v_count int := 0;
    v_bytes bigint := 0;
begin
    if jsonb_typeof(p_headers) <> 'object' then
        raise exception 'headers must be a JSON object of name to value' using errcode = '22023', column = 'headers';
    end if;
    for v_name, v_value in select key, value from jsonb_each(p_headers) loop
        v_count := v_count + 1;
        if v_count > 100 then
            raise exception 'headers: more than 100 headers' using errcode = '22023', column = 'headers';
        end if;
        if v_name !~ '^[!#$%&''*+.^_`|~0-9A-Za-z-]+$' then
            raise exception 'headers: % is not a valid header name', to_json(left(v_name, 64))
                using errcode = '22023', column = 'headers';
        end if;
        if jsonb_typeof(v_value) = 'string' then
            v_text := v_value #>> '{}';
            if v_text ~ '[\x01-\x08\x0a-\x1f\x7f]' then
                -- Never echo the value: it may be a credential.
                raise exception 'headers: the value of % contains a control character', to_json(v_name)
                    using errcode = '22023', column = 'headers';
            end if;
        elsif jsonb_typeof(v_value) = 'object' and jsonb_typeof(v_value -> 'secret') = 'string'
              and v_value - 'secret' = '{}'::jsonb then
            v_text := v_value ->> 'secret';
            if length(v_text) not between 1 and 128 or v_text ~ '[^A-Za-z0-9_.-]' then
                raise exception 'headers: the secret name for % must be 1 to 128 letters, digits, _ . -', to_json(v_name)
                    using errcode = '22023', column = 'headers';
            end if;
        else
            raise exception 'headers: the value of % must be a string or {"secret": "NAME"} and nothing else', to_json(v_name)
                using errcode = '22023', column = 'headers';
        end if;
        v_bytes := v_bytes + octet_length(v_name) + octet_length(v_text);
    end loop;
    if v_bytes > 65536 then
        raise exception 'headers: names and values exceed 65536 bytes in total' using errcode = '22023', column = 'headers';
    end if;
    if v_count > 1 and (select count(distinct lower(k)) from jsonb_object_keys(p_headers) as k) < v_count then
        raise exception 'headers: a header is given twice (names that differ only in case are the same header)'
            using errcode = '22023', column = 'headers';
    end if;
    return true;
end
$_$;


--
-- Name: FUNCTION check_headers(p_headers jsonb); Type: ACL
--

REVOKE ALL ON FUNCTION courier.check_headers(p_headers jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION courier.check_headers(p_headers jsonb) TO courier_worker;
GRANT ALL ON FUNCTION courier.check_headers(p_headers jsonb) TO courier_admin;


--
-- Name: headers_plainly_valid(jsonb); Type: FUNCTION
--

CREATE FUNCTION courier.headers_plainly_valid(p_headers jsonb) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $_$
    select octet_length(p_headers::text) <= 900
       and p_headers::text ~ '^\{("[-!#$%&''*+.^_`|~0-9A-Za-z]+": ("[^"\\\x7f]*"|\{"secret": "[A-Za-z0-9_.-]+"\})(, "[-!#$%&''*+.^_`|~0-9A-Za-z]+": ("[^"\\\x7f]*"|\{"secret": "[A-Za-z0-9_.-]+"\}))*)?\}$'
       and octet_length(jsonb_path_query_array(p_headers, 'lax $.*.secret')::text) <= 132
       and lower(p_headers::text)::jsonb::text = lower(p_headers::text)
$_$;


--
-- Name: FUNCTION headers_plainly_valid(p_headers jsonb); Type: ACL
--

REVOKE ALL ON FUNCTION courier.headers_plainly_valid(p_headers jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION courier.headers_plainly_valid(p_headers jsonb) TO courier_worker;
GRANT ALL ON FUNCTION courier.headers_plainly_valid(p_headers jsonb) TO courier_admin;


--
-- Name: is_secret_name(text); Type: FUNCTION
--

CREATE FUNCTION courier.is_secret_name(name text) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    select name !~ '[^A-Za-z0-9_.-]' and length(name) between 1 and 128
$$;


--
-- Name: FUNCTION is_secret_name(name text); Type: ACL
--

REVOKE ALL ON FUNCTION courier.is_secret_name(name text) FROM PUBLIC;
GRANT ALL ON FUNCTION courier.is_secret_name(name text) TO courier_worker;
GRANT ALL ON FUNCTION courier.is_secret_name(name text) TO courier_admin;
