using System;

namespace Tether.Client.Core
{
    /// <summary>Source of the current time, injected so schedules and countdowns are testable.</summary>
    public interface IClock
    {
        /// <summary>Now, in UTC.</summary>
        DateTimeOffset UtcNow { get; }
    }

    /// <summary>The machine's clock.</summary>
    public sealed class SystemClock : IClock
    {
        /// <summary>The shared instance.</summary>
        public static readonly SystemClock Instance = new SystemClock();

        /// <inheritdoc />
        public DateTimeOffset UtcNow
        {
            get { return DateTimeOffset.UtcNow; }
        }
    }

    /// <summary>Where Core writes diagnostics (Visual Studio: the "Tether" output pane; tests: a list).</summary>
    public interface ILog
    {
        /// <summary>Writes one line.</summary>
        void Write(string line);
    }

    /// <summary>A log that drops everything.</summary>
    public sealed class NullLog : ILog
    {
        /// <summary>The shared instance.</summary>
        public static readonly NullLog Instance = new NullLog();

        /// <inheritdoc />
        public void Write(string line)
        {
        }
    }
}
