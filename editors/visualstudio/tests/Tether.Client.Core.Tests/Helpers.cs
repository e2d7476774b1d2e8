using System;
using System.Collections.Generic;
using System.IO;
using System.Linq;
using System.Threading;
using System.Threading.Tasks;
using Newtonsoft.Json.Linq;
using Tether.Client.Core;
using Tether.Client.Core.Ui;

namespace Tether.Client.Core.Tests
{
    /// <summary>A clock the test moves by hand.</summary>
    public sealed class FakeClock : IClock
    {
        public FakeClock()
        {
            UtcNow = new DateTimeOffset(2026, 11, 22, 1, 0, 0, TimeSpan.Zero);
        }

        public DateTimeOffset UtcNow { get; set; }

        public void Advance(TimeSpan by)
        {
            UtcNow = UtcNow + by;
        }
    }

    /// <summary>A log kept in memory, printed by failing tests.</summary>
    public sealed class ListLog : ILog
    {
        private readonly List<string> lines = new List<string>();

        public void Write(string line)
        {
            lock (lines)
            {
                lines.Add(line);
            }
        }

        public List<string> Lines
        {
            get { lock (lines) { return new List<string>(lines); } }
        }

        public override string ToString()
        {
            return string.Join("\n", Lines);
        }
    }

    /// <summary>
    /// One direction of an in-memory byte pipe: writes append, reads block until data or close.
    /// Stands in for a process's stdin/stdout in the framing and connection tests.
    /// </summary>
    public sealed class BlockingPipe : Stream
    {
        private readonly Queue<byte> bytes = new Queue<byte>();
        private bool closed;

        public override bool CanRead { get { return true; } }
        public override bool CanSeek { get { return false; } }
        public override bool CanWrite { get { return true; } }
        public override long Length { get { throw new NotSupportedException(); } }
        public override long Position { get { throw new NotSupportedException(); } set { throw new NotSupportedException(); } }

        public override void Flush()
        {
        }

        public override int Read(byte[] buffer, int offset, int count)
        {
            lock (bytes)
            {
                while (bytes.Count == 0 && !closed)
                {
                    Monitor.Wait(bytes);
                }
                int n = 0;
                while (n < count && bytes.Count > 0)
                {
                    buffer[offset + n++] = bytes.Dequeue();
                }
                return n;
            }
        }

        public override void Write(byte[] buffer, int offset, int count)
        {
            lock (bytes)
            {
                if (closed) throw new IOException("pipe closed");
                for (int i = 0; i < count; i++) bytes.Enqueue(buffer[offset + i]);
                Monitor.PulseAll(bytes);
            }
        }

        /// <summary>End of stream for the reader once the queued bytes are read.</summary>
        public void CloseWriter()
        {
            lock (bytes)
            {
                closed = true;
                Monitor.PulseAll(bytes);
            }
        }

        protected override void Dispose(bool disposing)
        {
            CloseWriter();
            base.Dispose(disposing);
        }

        public override long Seek(long offset, SeekOrigin origin) { throw new NotSupportedException(); }
        public override void SetLength(long value) { throw new NotSupportedException(); }
    }

    /// <summary>
    /// An <see cref="ITetherUi"/> that records every intent and answers dialogs from a script
    /// (a queue of button/option ids; null = closed without an answer).
    /// </summary>
    public sealed class RecordingUi : ITetherUi
    {
        private readonly object gate = new object();
        public readonly List<UiIntent> Applied = new List<UiIntent>();
        public readonly List<ShowModal> Modals = new List<ShowModal>();
        public readonly List<AskChoice> Choices = new List<AskChoice>();
        public readonly Queue<string> ModalAnswers = new Queue<string>();
        public readonly Queue<string> ChoiceAnswers = new Queue<string>();

        public void Apply(UiIntent intent)
        {
            lock (gate) Applied.Add(intent);
        }

        public Task<string> ShowModalAsync(ShowModal modal)
        {
            lock (gate)
            {
                Modals.Add(modal);
                if (ModalAnswers.Count == 0) throw new InvalidOperationException("unexpected modal: " + modal.Message + " / " + modal.Detail);
                return Task.FromResult(ModalAnswers.Dequeue());
            }
        }

        public Task<string> AskChoiceAsync(AskChoice choice)
        {
            lock (gate)
            {
                Choices.Add(choice);
                if (ChoiceAnswers.Count == 0) throw new InvalidOperationException("unexpected choice: " + choice.Title);
                return Task.FromResult(ChoiceAnswers.Dequeue());
            }
        }

        public List<T> Of<T>() where T : UiIntent
        {
            lock (gate) return Applied.OfType<T>().ToList();
        }
    }

    public static class Json
    {
        /// <summary>Parses JSON written with single quotes for readability.</summary>
        public static JToken Q(string singleQuoted)
        {
            return Tether.Client.Core.Protocol.ProtocolJson.Parse(singleQuoted.Replace('\'', '"'));
        }
    }
}
