"""Credentials on command lines and in connection strings that the assignment detector cannot
read: short flags whose meaning depends on the command (`docker login -p`, `ldapsearch -w`,
`redis-cli -a`), long flags named after a credential (`--admin-password`, `--with-token`),
`key=value` pairs inside a command (`--from-literal=password=...`), `password=` /`pwd=` pairs
in JDBC, ODBC, ADO.NET and libpq strings, secrets fed to a command's stdin (`echo X | docker login
--password-stdin`, `<<< X`), positional secrets of a few commands (`vault login X`, `rabbitmqctl
add_user U X`, `cargo login X`, `poetry config http-basic.R U X`, `openssl passwd X`),
case-sensitive short flags (`zip -P`, `smbclient -U user%X`, openssl `pass:X`, `snmpwalk -c X`),
`user:X@host` arguments (`mysqlsh`, Impacket), build properties (`mvn -Drepo.password=X`) and Oracle
`user/pass@host` logins. A password may hold `@`: in `user:X@host` and `user/X@db` the last `@`
that a host follows ends it. A command continued over lines (a trailing backslash, PowerShell's
backtick, cmd's `^`) is read as one line.

A value is taken only when it is not a placeholder or variable (`$PASS`, `${X}`, `<token>`,
`%DB_PASS%`) and not a flag itself; values read from stdin leave nothing to redact.
"""
from __future__ import annotations

import re
from typing import Iterator

from .detectors import Candidate
from .patterns import PASSWORDS
from .prefilter import trie_pattern
from .validators import CONTINUATION, char_classes, join_continuations, looks_like_placeholder

_VAL = r"""(?P<v>"[^"\n]{1,200}"|'[^'\n]{1,200}'|[^\s"'`|;&<>$-][^\s"'`|;]*)"""
# commands and options that read a secret from stdin: `--password-stdin`, sshfs `-o password_stdin`,
# openconnect `--passwd-on-stdin`, `sudo -S`, `chpasswd`, `passwd --stdin`, `kinit` (reads the password)
_STDIN_READERS = (r"--password-stdin|password_stdin|--passwd-on-stdin|--with-token|--token-stdin|--stdin-password|"
                  r"\bsudo[ \t]+-S\b|\bchpasswd\b|--stdin\b|\bkinit\b|\bpasswd\b|\bsmbpasswd\b|"
                  r"\bpass[ \t]+insert\b|store-secret|\bsecrets?[ \t]+create\b")
# a here-string (`<<< X`) also answers an interactive login prompt (`npm login`, `gem signin`);
# a pipe into `... login` is too loose a sign (`echo Welcome | mail -s login`)
_HERESTRING_READERS = _STDIN_READERS + r"|\blogin\b|\bsignin\b"
# Command rules: (command names, what follows the name up to the value, case-sensitive?, rule id,
# minimum value length). Each compiles to one regex per name that starts with the name itself, so
# `re` jumps between occurrences of that literal; a rule runs only when its name starts a word
# somewhere in the text (`_NAME_SCAN`, one pass for all names). Flags are those documented by each
# tool's --help.
_LOGIN_P = r"[^\n]{0,120}?\blogin\b[^\n]{0,200}?[ \t]-p[ \t]*"
_CMD_TABLE: tuple[tuple[tuple[str, ...], str, bool, str, int], ...] = (
    (("docker", "podman", "nerdctl", "buildah", "skopeo", "helm", "oras", "crane", "regctl", "az", "cf", "oc", "heroku"),
     _LOGIN_P, False, "cli_short_flag", 4),
    (("ldap",), r"(?:search|modify|add|delete|passwd|whoami|compare|modrdn)\b[^\n]{0,200}?[ \t]-w[ \t]*", False,
     "cli_short_flag", 4),
    (("redis-cli", "redis-benchmark", "valkey-cli", "valkey-benchmark", "keydb-cli"), r"\b[^\n]{0,200}?[ \t]-a[ \t]*",
     False, "cli_short_flag", 4),
    # `iwconfig wlan0 key s:PASSPHRASE` (a hex WEP key follows `key` without `s:`)
    (("iwconfig",), r"\b[^\n]{0,200}?[ \t]key[ \t]+s:", False, "cli_short_flag", 4),
    # ApacheBench `ab -A user:password`
    (("ab",), r"[ \t](?:[^\n]{0,200}?[ \t])?-A[ \t]+[^\s:]+:", True, "cli_short_flag", 4),
    (("smbclient", "rpcclient", "net"), r"\b[^\n]{0,120}?[ \t]-u[ \t]*[^\s%]+%(?=\S)", False, "cli_short_flag", 4),
    (("mongo",), r"(?:sh|dump|restore|import|export|stat|top)?\b[^\n]{0,200}?[ \t]-p[ \t]*", False, "cli_short_flag", 4),
    (("useradd", "usermod"), r"\b[^\n]{0,120}?[ \t]-p[ \t]*", False, "cli_short_flag", 4),
    (("lftp",), r"\b[^\n]{0,120}?[ \t]-u[ \t]+[^\s,]+,(?=\S)", False, "cli_short_flag", 4),
    # `-b` (password on the command line) may sit anywhere in a bundle: `-b`, `-bc`, `-cbB`:
    # `htpasswd -b FILE USER PW`; with `-n` (print, no file) `htpasswd -nb USER PW`
    (("htpasswd",), r"(?=[^\n]*[ \t]-[a-zA-Z]*b)(?![^\n]*[ \t]-[a-zA-Z]*n)(?:[ \t]+-[a-zA-Z]+)+[ \t]+\S+[ \t]+\S+[ \t]+", True,
     "cli_short_flag", 4),
    (("htpasswd",), r"(?=[^\n]*[ \t]-[a-zA-Z]*b)(?=[^\n]*[ \t]-[a-zA-Z]*n)(?:[ \t]+-[a-zA-Z]+)+[ \t]+\S+[ \t]+", True,
     "cli_short_flag", 4),
    # `mysqladmin -u root password NEWPW`; `smbclient //HOST/SHARE PASSWORD -U USER`
    (("mysqladmin",), r"\b[^\n]{0,200}?[ \t]password[ \t]+", False, "cli_positional", 4),
    (("smbclient",), r"[ \t]+//\S+[ \t]+(?!-)", True, "cli_positional", 4),
    # Oracle tools take `user/password` with no `@` too: `expdp hr/PW directory=...`
    (("expdp", "impdp", "sqlplus", "sqlldr", "rman", "exp", "imp"),
     r"(?:[ \t]+-[\w-]+)*[ \t]+(?:target[ \t]+)?[A-Za-z_][\w$#]{0,30}/(?![/\s])", True, "cli_userinfo_plain", 4),
    (("etcdctl",), r"\b[^\n]{0,200}?[ \t]user[ \t]+add[ \t]+[^\s:]+:", True, "cli_positional", 4),
    (("netsh",), r"\b[^\n]{0,200}?[ \t]key(?:material)?=", False, "cli_short_flag", 8),
    # `redis-cli AUTH [USER] PASSWORD` (the last word)
    (("redis-cli", "valkey-cli", "keydb-cli"), r"\b[^\n]{0,200}?[ \t]auth[ \t]+(?:\S+[ \t]+(?=\S+[ \t]*(?:\n|$)))?", False,
     "cli_positional", 4),
    # case matters: `zip -p` is another option and `unzip -p` pipes to stdout
    (("zip", "unzip", "7z", "7za", "7zr"), r"\b[^\n]{0,120}?[ \t]-P[ \t]*", True, "cli_short_flag", 4),
    (("7z", "7za", "rar", "unrar"), r"\b[^\n]{0,120}?[ \t]-p(?![ \t-])", True, "cli_short_flag", 4),
    (("pdftk",), r"\b[^\n]{0,200}?[ \t](?:owner_pw|user_pw)[ \t]+", True, "cli_positional", 4),
    # `wpa_passphrase SSID PASSPHRASE`
    (("wpa_passphrase",), r"[ \t]+\S+[ \t]+", True, "cli_positional", 8),
    # `pass:` is possessive: `-passin pass:$PASS` must not fall back to taking `pass:$PASS` whole
    (("openssl",), r"\b[^\n]{0,200}?[ \t]-(?:pass(?:in|out|word)?|k)[ \t]+(?:pass:)?+", True, "cli_short_flag", 4),
    (("http", "https", "xh"), r"(?=[ \t])[^\n]{0,120}?[ \t](?:-a|--auth)[ \t=]+[^\s:]+:", True, "cli_short_flag", 4),
    (("sqlcmd", "bcp", "osql", "isql"), r"\b[^\n]{0,200}?[ \t]-P[ \t]*", True, "cli_short_flag", 4),
    # `-N` new passphrase, `-P` old passphrase
    (("ssh-keygen",), r"\b[^\n]{0,120}?[ \t]-[NP][ \t]+", True, "cli_short_flag", 4),
    # v3 auth/privacy passphrases `-A`/`-X`, v1/v2c community string `-c` (the defaults `public` and
    # `private` are plain words, which `_ok` rejects)
    (("snmp",), r"\w*\b[^\n]{0,200}?[ \t]-[AXc][ \t]*", True, "cli_short_flag", 4),
    # a secret written into a command's stdin: `echo X | docker login --password-stdin`
    (("echo", "printf"), r"(?:[ \t]+-[neE]+)*(?:[ \t]+(?:\"%s\\?n?\"|'%s\\?n?'))?[ \t]+(?=[^\n|]{1,300}\|[^\n|]{0,200}?"
     r"(?:" + _STDIN_READERS + r"))", True, "cli_stdin", 4),
    (("ipmitool", "mosquitto_pub", "mosquitto_sub", "mosquitto_rr"), r"\b[^\n]{0,200}?[ \t]-P[ \t]*", True,
     "cli_short_flag", 4),
    # PuTTY tools: `plink -pw PASSWORD`
    (("plink", "pscp", "psftp", "putty"), r"\b[^\n]{0,200}?[ \t]-pw[ \t]+", True, "cli_short_flag", 4),
    (("psexec", "psexec64", "paexec", "rdesktop", "twine", "cqlsh", "cypher-shell", "rabbitmqadmin", "racadm",
      "evil-winrm", "crackmapexec", "nxc", "netexec", "smbmap", "influx", "mycli"),
     r"\b[^\n]{0,200}?[ \t]-p[ \t]+", True, "cli_short_flag", 4),
    # `-t TOKEN`: DigitalOcean, Fly.io, Codecov, InfluxDB 2 CLIs (not `fly`: Concourse's `fly -t` names a target)
    (("doctl", "flyctl", "codecov", "influx"), r"\b[^\n]{0,200}?[ \t]-t[ \t]+", True, "cli_short_flag", 8),
    # `uv publish -p PASSWORD` / `-t TOKEN`
    (("uv",), r"[ \t]+publish\b[^\n]{0,200}?[ \t]-[pt][ \t]+", True, "cli_short_flag", 6),
    # NuGet: `dotnet nuget push -k KEY`, `nuget push -ApiKey KEY`, `nuget setapikey KEY`
    (("nuget",), r"[ \t]+(?:push\b[^\n]{0,200}?[ \t]-(?:k|apikey)[ \t]+|setapikey[ \t]+)", False, "cli_short_flag", 8),
    # `cargo login TOKEN` (without it cargo reads stdin)
    (("cargo",), r"[ \t]+login(?:[ \t]+--registry[ =]\S+)?[ \t]+", True, "cli_positional", 8),
    # Poetry and Composer auth settings: `poetry config http-basic.REPO USER PASS`,
    # `poetry config pypi-token.REPO TOKEN`, `composer config [-g] http-basic.HOST USER PASS`,
    # `composer config -g github-oauth.github.com TOKEN` (also gitlab-token, bearer)
    (("poetry", "composer"), r"[ \t]+config(?:[ \t]+-[-\w]+)*[ \t]+http-basic\.\S+[ \t]+\S+[ \t]+", False,
     "cli_config_set", 4),
    (("poetry", "composer"), r"[ \t]+config(?:[ \t]+-[-\w]+)*[ \t]+(?:pypi-token|github-oauth|gitlab-token|gitlab-oauth|"
     r"bearer|bitbucket-oauth\.\S+[ \t]+\S+)\.\S+[ \t]+", False, "cli_config_set", 8),
    # MySQL Shell and etcdctl take `user:password` (`mysqlsh root:PW@host`, `etcdctl --user root:PW`);
    # the password runs to the last `@` before the host
    (("mysqlsh",), r"\b[^\n]{0,120}?[ \t](?:--uri[ \t=]+)?[^\s:@/\"'=-][^\s:@/\"']*:(?=\S*@)", True, "cli_userinfo", 4),
    (("etcdctl",), r"\b[^\n]{0,200}?[ \t]--user(?:=|[ \t]+)[^\s:\"']+:", True, "cli_short_flag", 4),
    # Impacket: `secretsdump.py CORP/admin:PW@10.0.0.5` (also `impacket-psexec`, `wmiexec.py` ...)
    (("psexec.py", "wmiexec", "smbexec", "secretsdump", "atexec", "dcomexec", "getuserspns", "gettgt", "getnpusers",
      "impacket-"), r"[\w.-]*[ \t]+(?:-[\w-]+[ \t]+)*(?:[\w.-]+/)?[\w.$-]+:(?=\S*@)", True, "cli_userinfo", 4),
    # secrets stored by a cloud CLI: `az keyvault secret set --value V`, `aws ssm put-parameter --value V`
    (("az",), r"[ \t]+keyvault[ \t]+secret[ \t]+set\b[^\n]{0,300}?[ \t]--value(?:=|[ \t]+)", False, "cli_long_flag", 4),
    (("aws",), r"[ \t]+ssm[ \t]+put-parameter\b[^\n]{0,300}?[ \t]--value(?:=|[ \t]+)", False, "cli_long_flag", 4),
    # password hashing tools take the clear text last: `openssl passwd -6 -salt S PW`, `mkpasswd -m sha-512 PW`
    (("openssl",), r"[ \t]+passwd(?:[ \t]+(?:-(?:salt|in)[ \t]+\S+|-(?!salt\b|in\b)[\w-]+))*[ \t]+", True, "cli_positional", 4),
    (("mkpasswd",), r"(?:[ \t]+(?:-[mSR][ \t]+\S+|--[\w-]+(?:=\S+)?|-(?![mSR]\b)\w+))*[ \t]+", True, "cli_positional", 4),
    # Pulumi: `pulumi config set --secret NAME VALUE` (the flag may also follow the value)
    (("pulumi",), r"(?=[^\n]*[ \t]--secret\b)[ \t]+config[ \t]+set(?:[ \t]+--[\w-]+)*[ \t]+(?!-)[\w:.-]+[ \t]+", True,
     "cli_config_set", 4),
    # `jenkins-cli -auth USER:TOKEN` (`-auth @file` reads a file)
    (("jenkins-cli",), r"\b[^\n]{0,200}?[ \t]-auth[ \t]+[^\s:@\"']+:", True, "cli_short_flag", 4),
    (("ncftp",), r"(?:put|get|ls)?\b[^\n]{0,200}?[ \t]-p[ \t]+", True, "cli_short_flag", 4),
    # `mosquitto_passwd -b FILE USER PASSWORD`
    (("mosquitto_passwd",), r"\b[^\n]{0,120}?[ \t]-b[ \t]+\S+[ \t]+\S+[ \t]+", True, "cli_positional", 4),
    # `redis-cli CONFIG SET requirepass PW` (also masterauth)
    (("redis-cli",), r"\b[^\n]{0,200}?[ \t]config[ \t]+set[ \t]+(?:requirepass|masterauth)[ \t]+", False,
     "cli_positional", 4),
    # `ldappasswd -s NEWPW` / `-a OLDPW` (lower case only: `-S`/`-A` prompt)
    (("ldappasswd",), r"\b[^\n]{0,200}?[ \t]-[saw][ \t]*", True, "cli_short_flag", 4),
    # `samba-tool user create NAME PASSWORD`, `mc admin user add ALIAS USER SECRET`, `cf auth USER PASSWORD`
    (("samba-tool",), r"[ \t]+user[ \t]+(?:create|add)[ \t]+\S+[ \t]+", True, "cli_positional", 4),
    (("mc",), r"[ \t]+admin[ \t]+user[ \t]+add[ \t]+\S+[ \t]+\S+[ \t]+", True, "cli_positional", 6),
    (("cf",), r"[ \t]+auth[ \t]+[^\s-]\S*[ \t]+", True, "cli_positional", 4),
    # `net use [D:] \\SERVER\SHARE PASSWORD /user:NAME`; Windows also reads it after `/user:NAME`
    (("net",), r"[ \t]+use(?:[ \t]+(?:[a-z]:|\*))?[ \t]+\\\\\S+[ \t]+", False, "cli_positional", 4),
    (("net",), r"[ \t]+use\b[^\n]{0,200}?[ \t]/u(?:ser)?:\S+[ \t]+", False, "cli_positional", 4),
    # PowerShell: `ConvertTo-SecureString "PW" -AsPlainText -Force`
    (("convertto-securestring",), r"[ \t]+(?:-string[ \t]+)?(?=[\"'][^\"'\n]+[\"'][^\n]*-asplaintext)", False,
     "cli_positional", 4),
    # Java system properties and Gradle project properties named after a credential:
    # `mvn deploy -Drepo.password=PW`, `sonar-scanner -Dsonar.token=T`, `gradle publish -PsigningPassword=PW`
    (("mvn", "mvnw", "gradle", "gradlew", "sonar-scanner", "java"),
     r"\b[^\n]{0,300}?[ \t]-[dp][\w.-]*(?:password|passwd|pwd|token|secret|apikey|api\.key|sonar\.login)=", False,
     "cli_property", 6),
    # Windows-style `/p:` `/password:` `/pass:` switches (FreeRDP, wmic, cmdkey)
    (("xfreerdp", "wlfreerdp", "sdl-freerdp", "wmic", "cmdkey"), r"\b[^\n]{0,200}?[ \t]/(?:p|pass|password):", False,
     "cli_short_flag", 4),
    (("schtasks",), r"\b[^\n]{0,200}?[ \t]/rp[ \t]+", False, "cli_short_flag", 4),
    # `gh secret set NAME --body VALUE`
    (("gh",), r"[ \t]+secret[ \t]+set\b[^\n]{0,120}?[ \t](?:-b|--body)(?:=|[ \t]+|(?=[\"']))", True, "cli_short_flag", 6),
    # commands taking the secret as a positional argument
    # MinIO client: `mc alias set NAME URL ACCESS_KEY SECRET_KEY`
    (("mc",), r"[ \t]+(?:alias[ \t]+set|config[ \t]+host[ \t]+add)[ \t]+\S+[ \t]+\S+[ \t]+\S+[ \t]+", True,
     "cli_positional", 8),
    # `net user NAME PASSWORD /add`
    (("net",), r"[ \t]+user[ \t]+[^\s/*]+[ \t]+(?=[^\s/*][^\n]*?/(?:add|domain)\b)", False, "cli_positional", 6),
    (("vault",), r"[ \t]+login(?:[ \t]+-[\w-]+(?:=\S+)?)*[ \t]+(?![\w.-]+=)", True, "cli_positional", 8),
    (("rabbitmqctl",), r"[ \t]+(?:add_user|change_password|authenticate_user)[ \t]+\S+[ \t]+", True, "cli_positional", 8),
    # a credential fed to an encoder: `printf '%s' 'user:pass' | base64`, `echo -n 'PW' | xxd -p`
    (("echo", "printf"), r"(?:[ \t]+-[neE]+)*(?:[ \t]+(?:\"%s\\?n?\"|'%s\\?n?'))?[ \t]+(?=[^\n|]{1,300}\|[ \t]*"
     r"(?:base64|xxd|od|hexdump|openssl[ \t]+(?:base64|enc))\b)", True, "cli_encoded", 8),
    # HashiCorp Vault KV writes: `vault kv put PATH key=VALUE`
    (("vault",), r"[ \t]+kv[ \t]+(?:put|patch)\b(?:[ \t]+-[\w-]+(?:=\S+)?)*[ \t]+\S+[ \t]+[\w.-]+=", True,
     "cli_positional", 6),
    # `<tool> config set <credential name> <value>` and tools whose arguments are name/value words
    (("nmcli", "rclone"), r"\b[^\n]{0,120}?[ \t](?!-)[\w.:/-]*(?:password|passwd|secret|token|psk)[\w.-]*[ \t]+", False,
     "cli_config_set", 6),
    (("aws", "npm", "yarn", "pnpm", "pip", "git", "heroku", "pulumi"),
     r"[ \t]+config(?:ure)?(?::set|[ \t]+set)?\b[^\n]{0,120}?[ \t](?!-)[\w.:/-]*(?:password|passwd|secret|token|_auth)[\w.-]*[ \t]+",
     False, "cli_config_set", 6),
)


def _compile_table():
    out: dict[str, list[tuple[re.Pattern, bool, str, int]]] = {}
    for names, tail, case, rule, min_len in _CMD_TABLE:
        for name in names:
            # the name first (a literal `re` can skip to), then a look-behind: not inside a longer word
            rx = re.compile(re.escape(name) + rf"(?<![\w-].{{{len(name)}}})" + tail + _VAL)
            out.setdefault(name, []).append((rx, case, rule, min_len))
    return out


_CMD_RULES = _compile_table()
# Any command: a user flag, then on the same line a short password flag. Tools agree on the pair
# (`-u USER ... -p PASS`, `-l LOGIN -p PASS`, `-U USER -P PASS`, `--user U -w PASS`), where `-p` alone
# is often a port: the user flag before it is what makes it a password (`_PORT_OR_FILE` says when not).
_USER_THEN_PASS = re.compile(
    r"-(?<!\S-)(?:[ulU]|-user(?:name)?|-login)(?:[=:]|[ \t]+)(?![-\s])[^\n]{1,200}?[ \t]-(?:[pPw](?:[=:]|[ \t]+|(?=[^\s-]))|"
    r"(?:pw|-pass(?:word)?)(?:=|[ \t]+))"
    + _VAL)
# secret stores: `<tool> secrets set NAME VALUE`, `glab variable set NAME VALUE`, `dotnet user-secrets
# set NAME VALUE`, `consul kv put KEY VALUE`; and `set-initial-password VALUE`-style subcommands
_STORE_SET = re.compile(r"(?:user-secrets|secrets?|variables?|kv)[ \t]+(?:set|add|put)(?:[ \t]+-[-\w]+(?:=\S+)?)*"
                        r"[ \t]+(?![-$])[\w./:-]{1,100}[ \t]+(?!-)" + _VAL)
_SET_PASSWORD = re.compile(r"(?:set|change|reset)-(?:initial-)?password[ \t]+(?!-)" + _VAL)
# what a `-p` after a user flag holds when it is not a password: a port or port mapping
# (`-p 127.0.0.1:8080:80/tcp`), or a file (`ab -u put.txt -p post.json`)
_PORT_OR_FILE = re.compile(r"(?:[\d.]+:|\[[0-9a-fA-F:]+\]:)?\d+(?:-\d+)?(?::\d+(?:-\d+)?)?(?:/(?:tcp|udp|sctp))?"
                           r"|[\w./~-]+\.(?:json|txt|xml|ya?ml|csv|conf|cfg|ini|pem|key|crt|log|sql|sh|py|env|properties)")
# `cmd --with-token <<< X`: the here-string after a command that reads a secret from stdin
_HERESTRING = re.compile(r"<<<[ \t]*" + _VAL)
_STDIN_CMD = re.compile(_HERESTRING_READERS)
# Oracle `user/password@host[:port][/service]` (sqlplus, expdp, `jdbc:oracle:thin:`)
_ORACLE_HINTS = ("oracle", "sqlplus", "expdp", "impdp", "rman", "sqlldr", "1521", "tnsnames")
# led by the `/` (a literal `re` skips to); the user name before it is checked by `_ORACLE_USER`
# The password may hold `@` itself (`scott/p@ss@orcl`): it runs to the last `@` that a host follows.
_ORACLE = re.compile(r"/(?P<v>\"[^\"\n]{1,128}\"|[^\s/\"'<>]{1,128})@(?=//|[\w.-]+(?::\d+)?[:/\s\"']|[\w.-]+$)", re.M)
_ORACLE_USER = re.compile(r"(?<![\w/.-])[A-Za-z_][\w$#]{0,30}\Z")
# single-dash long flags of Java and Go tools (`keytool -storepass`, `influx -password`)
# (`consul`/`nomad -token=`, `nuget -ApiKey`)
_SINGLE_KEYS = ("storepass", "-keypass", " -pass", " -pwd", " -token", " -apikey")
_SINGLE = re.compile(r"(?<![\w-])-(?:(?:src|dest)?storepass|keypass|password|passwd|pass|pwd|token|apikey)(?:=|[ \t]+)" + _VAL)
_LONG = re.compile(
    r"--(?<![\w-]--)(?:[a-z0-9]+[-._]){0,4}(?:password|passwd|passphrase|pass|pwd|token|secret|api-?key|access-key|secret-key|"
    r"client-secret|secret-string|auth|credentials?|bearer|(?:account|storage|master|shared|encryption|signing|license)-key)"
    r"(?:=|[ \t]+)" + _VAL)
# skopeo/buildah `--creds USER:PASS` (`--src-creds`, `--dest-creds`)
_CREDS = re.compile(r"--(?<![\w-]--)(?:[a-z]+-)?creds(?:=|[ \t]+)[^\s:\"']+:" + _VAL)
_INLINE = re.compile(  # `password=...` inside a command or a query string / key=value connection string
    r"(?:(?:client|refresh|app|auth)_)?(?:password|passwd|pwd|pass|secret|token|api_?key|access_?token|bind_?password|bindcredential)"
    r"=(?P<v>\"[^\"\n]{1,200}\"|'[^'\n]{1,200}'|\{[^}\n]{1,200}\}|[^\s\"'`;&|)<>,]+)")
# connection strings and command-line pairs are written without spaces around `=`
_INLINE_KEYS = ("pass=", "passwd=", "password=", "pwd=", "secret=", "token=", "key=", "bindcredential=")
# a line holding one of these is a connection string or a command
_CONN_HINTS = ("jdbc:", "odbc", "server=", "data source=", "host=", "dbname=", "uid=", "user id=", "user=",
               "username=", "kubectl", "docker", "vault ", "curl ", "mysql", "psql", "mongo", "--from-literal", "ldap", "mount", "cifs")
_FLAG_NOT_SECRET = re.compile(r"-(?:file|path|env|stdin|prompt|length|min|max|policy|reset|hash|type|dir|name|id|"
                              r"url|expiry|expires|ttl|store|helper|command|cmd|var|source|field)(?=[= \t]|$)")


_WORDLIST = re.compile(r"[\w./~-]+\.(?:txt|lst|list|dic|csv)")
# three or more words joined by `_` (`meadow_basalt_sierra`): a passphrase, where an identifier
# given as a value names a credential (`db_password`) or has one or two parts
_WORD_PASSPHRASE = re.compile(r"(?!\w*(?:pass|secret|token|key|pwd|user|name))[a-z]{3,}(?:_[a-z]{3,}){2,}")


def _strip(v: str) -> tuple[str, int]:
    if len(v) >= 2 and v[0] == v[-1] and v[0] in "\"'{":
        return v[1:-1], 1
    if len(v) >= 2 and v[0] == "{" and v[-1] == "}":
        return v[1:-1], 1
    return v, 0


def _ok(v: str, min_len: int = 4) -> bool:
    if looks_like_placeholder(v) or v.startswith(("-", "@", "/", "env:", "file:", "fd:")) or len(v) < min_len:
        return False
    if re.fullmatch(r"%\w+%|\$\w+|\w+\(.*\)|[a-z_]+|[A-Z_]+", v) and not _WORD_PASSPHRASE.fullmatch(v):
        return False  # %VAR%, $VAR, call(), an identifier: not a literal credential
    if _WORDLIST.fullmatch(v):
        return False  # `nxc -p passwords.txt`: a file of candidate passwords, not one
    return char_classes(v) >= 2 or len(v) >= 10


def _word_start(text: str, i: int) -> bool:
    """Whether offset `i` starts a word (no letter, digit, `_` or `-` before it)."""
    return i == 0 or not (text[i - 1].isalnum() or text[i - 1] in "_-")


def _yield_val(text: str, m: re.Match, rule: str, min_len: int = 4) -> Iterator[Candidate]:
    v, q = _strip(text[m.start("v"):m.end("v")])
    if rule == "cli_userinfo":  # `user:PASSWORD@host`: the password may hold `@`, the last one ends it
        v = v[:v.rfind("@")]
    if rule == "cli_userinfo_plain" and "@" in v:  # `user/PASSWORD@db`: the last `@` ends it
        v = v[:v.rfind("@")]
    if rule == "cli_encoded" and (" " in v or (":" not in v and char_classes(v) < 3)):
        return  # `echo 'hello world' | base64`: text, where a credential is one token (`user:pw`, `Xk9#q..`)
    if _ok(v, min_len):
        yield Candidate(m.start("v") + q, m.start("v") + q + len(v), PASSWORDS, "SECRET_PASSWORD", rule, 3)


def detect_cli_credentials(text: str, lower: str, present: frozenset[str] | set[str] | None = None) -> Iterator[Candidate]:
    """Command-line and connection-string credentials (see the module docstring). `present`: the
    keywords of `KEYWORDS` that occur in the text (command names: where they start a word), when
    a caller's prefilter already knows them; otherwise `_NAME_SCAN` finds them."""
    if CONTINUATION.search(text):
        text, lower = join_continuations(text), join_continuations(lower)
    if present is None:
        present = set(_NAME_SCAN.findall(lower))
        present.update(k for k in _SINGLE_KEYS if k in lower)
    for name in present & _CMD_NAMES:
        for rx, case, rule, min_len in _CMD_RULES[name]:
            for m in rx.finditer(text if case else lower):
                yield from _yield_val(text, m, rule, min_len)
    if " -" in text:
        for m in _USER_THEN_PASS.finditer(text):
            v, q = _strip(m.group("v"))
            if not _PORT_OR_FILE.fullmatch(v) and _ok(v, 6):
                yield Candidate(m.start("v") + q, m.start("v") + q + len(v), PASSWORDS, "SECRET_PASSWORD",
                                "cli_user_then_password", 3)
    if ("secret" in lower or "variable" in lower or "kv " in lower) and ("set" in lower or "add" in lower or "put" in lower):
        for m in _STORE_SET.finditer(text):
            if not _word_start(text, m.start()):
                continue
            yield from _yield_val(text, m, "cli_secret_store", 6)
    if "-password " in lower or "-password\t" in lower:
        for m in _SET_PASSWORD.finditer(text):
            if _word_start(text, m.start()):
                yield from _yield_val(text, m, "cli_positional", 6)
    if "<<<" in text:
        for m in _HERESTRING.finditer(text):
            if _STDIN_CMD.search(text, text.rfind("\n", 0, m.start()) + 1, m.start()):
                yield from _yield_val(text, m, "cli_stdin")
    if not present.isdisjoint(_SINGLE_KEYS):
        for m in _SINGLE.finditer(lower):
            yield from _yield_val(text, m, "cli_single_dash", 6)
    if "@" in text and any(h in lower for h in _ORACLE_HINTS):
        for m in _ORACLE.finditer(text):
            v, q = _strip(m.group("v"))
            if _ORACLE_USER.search(text, max(0, m.start() - 32), m.start()) and _ok(v):
                yield Candidate(m.start("v") + q, m.start("v") + q + len(v), PASSWORDS, "SECRET_PASSWORD", "oracle_login", 3)
    if "creds" in lower:
        for m in _CREDS.finditer(lower):
            yield from _yield_val(text, m, "cli_long_flag", 4)
    if "--" in text:
        for m in _LONG.finditer(lower):
            flag = lower[m.start():m.start("v")]
            if _FLAG_NOT_SECRET.search(flag.rstrip("= \t")):
                continue
            if flag.rstrip("= \t") == "--secret" and "config set" in lower[max(0, m.start() - 80):m.start()]:
                continue  # `pulumi config set --secret NAME VALUE`: a switch, NAME is not the secret
            v, q = _strip(text[m.start("v"):m.end("v")])
            if _ok(v, 6):
                yield Candidate(m.start("v") + q, m.start("v") + q + len(v), PASSWORDS, "SECRET_PASSWORD", "cli_long_flag", 3)
    if any(k in lower for k in _INLINE_KEYS):
        hinted: dict[int, bool] = {}  # line start -> whether that line holds a hint
        for m in _INLINE.finditer(lower):
            if m.start() and (lower[m.start() - 1].isalnum() or lower[m.start() - 1] in "_.-"):
                continue  # part of a longer name: `db_password = x` is the assignment detector's
            ls = lower.rfind("\n", 0, m.start()) + 1
            if ls not in hinted:
                le = lower.find("\n", m.end())
                line = lower[ls:le if le >= 0 else len(lower)]
                hinted[ls] = any(h in line for h in _CONN_HINTS)
            if not hinted[ls]:
                continue  # a plain `password = x` line is the assignment detector's case
            v, q = _strip(text[m.start("v"):m.end("v")])
            if _ok(v):
                yield Candidate(m.start("v") + q, m.start("v") + q + len(v), PASSWORDS, "SECRET_PASSWORD", "inline_pair", 3)


_CMD_NAMES = frozenset(_CMD_RULES)
# the literals the command rules and the single-dash flags need: this detector's prefilter keywords
KEYWORDS: tuple[str, ...] = tuple(sorted(_CMD_NAMES | set(_SINGLE_KEYS)))
# Command names where a word starts: a name inside a word (`doc` in `docker`, `az` in `lazy`) runs
# no rule, and `\b` plus a trie-shaped alternation is one cheap pass (a name's rule still checks
# its own boundaries). A family prefix (`ldap`, `mongo`, `snmp`) is found at the start of
# `ldapsearch`, `mongodump`.
_NAME_SCAN = re.compile(r"\b" + trie_pattern(sorted(_CMD_NAMES)))
