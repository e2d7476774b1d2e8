using System;
using System.Globalization;
using Tether.Client.Core.Protocol;

namespace Tether.Client.Core.Ui
{
    /// <summary>
    /// The status texts of R-RESUME-9 ("Resuming… attempt 2 of 3", "Rate limited, resuming in
    /// 40 s") and their siblings. Seconds are whole and rounded up, so a wait never reads as
    /// shorter than it is ("resuming in 1 s" until the very end).
    /// </summary>
    public static class StatusText
    {
        /// <summary>The ellipsis character used in status texts (U+2026).</summary>
        public const string Ellipsis = "\u2026";

        /// <summary>"Resuming… attempt {attempt} of {maxAttempts}", or "Resuming…" when the counts are unknown (≤ 0).</summary>
        public static string Resuming(int attempt, int maxAttempts)
        {
            if (attempt <= 0 || maxAttempts <= 0)
            {
                return "Resuming" + Ellipsis;
            }
            return string.Format(CultureInfo.InvariantCulture, "Resuming{0} attempt {1} of {2}", Ellipsis, attempt, maxAttempts);
        }

        /// <summary>"Resuming… next attempt in 2 s", or "Resuming… waiting to retry" without a delay.</summary>
        public static string WaitingRetry(long? retryInMs)
        {
            if (retryInMs == null)
            {
                return "Resuming" + Ellipsis + " waiting to retry";
            }
            return "Resuming" + Ellipsis + " next attempt " + InSeconds(retryInMs.Value);
        }

        /// <summary>"Rate limited, resuming in 40 s", or "Rate limited, waiting to resume" without a delay.</summary>
        public static string RateLimited(long? retryInMs)
        {
            if (retryInMs == null)
            {
                return "Rate limited, waiting to resume";
            }
            return "Rate limited, resuming " + InSeconds(retryInMs.Value);
        }

        /// <summary>"Session ready".</summary>
        public const string Ready = "Session ready";

        /// <summary>
        /// No session yet: the start-up resume found nothing to resume and started none
        /// (R-RESUME-11). Not an error; says how to start one.
        /// </summary>
        public const string NoSession = "No session yet. Send a prompt to start one, or run \"Tether: Resume Session\".";

        /// <summary>"Resume failed" or "Resume failed: network error".</summary>
        public static string Failed(ErrorKind? kind)
        {
            return kind == null ? "Resume failed" : "Resume failed: " + Describe(kind.Value);
        }

        /// <summary>"in 40 s" (rounded up), or "now" when the time has come.</summary>
        public static string InSeconds(long ms)
        {
            if (ms <= 0)
            {
                return "now";
            }
            return "in " + CeilSeconds(ms).ToString(CultureInfo.InvariantCulture) + " s";
        }

        /// <summary>Whole seconds, rounded up: 40000 → 40, 39001 → 40, 1 → 1, 0 → 0.</summary>
        public static long CeilSeconds(long ms)
        {
            if (ms <= 0)
            {
                return 0;
            }
            return (ms + 999) / 1000;
        }

        /// <summary>A short readable name of a failure kind ("network error", "authentication required"…).</summary>
        public static string Describe(ErrorKind kind)
        {
            switch (kind)
            {
                case ErrorKind.SessionExpired: return "session expired";
                case ErrorKind.SessionNotReady: return "agent not ready";
                case ErrorKind.Network: return "network error";
                case ErrorKind.ServerError: return "server error";
                case ErrorKind.RateLimited: return "rate limited";
                case ErrorKind.QuotaExceeded: return "quota exceeded";
                case ErrorKind.Authentication: return "authentication required";
                case ErrorKind.SessionCorrupt: return "session corrupt";
                case ErrorKind.AgentCrashed: return "agent crashed";
                case ErrorKind.InvalidRequest: return "invalid request";
                case ErrorKind.Cancelled: return "cancelled";
                default: return "unknown error";
            }
        }

        /// <summary>First 8 characters of a session id followed by "…" (R-UI-2), or the id when shorter.</summary>
        public static string ShortId(string sessionId)
        {
            if (string.IsNullOrEmpty(sessionId))
            {
                return "(unknown)";
            }
            return sessionId.Length <= 8 ? sessionId : sessionId.Substring(0, 8) + Ellipsis;
        }
    }
}
