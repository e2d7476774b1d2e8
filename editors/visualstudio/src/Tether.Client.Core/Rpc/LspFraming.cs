using System;
using System.Globalization;
using System.IO;
using System.Text;

namespace Tether.Client.Core.Rpc
{
    /// <summary>A byte stream that breaks the LSP base protocol's framing (bad or missing header, truncated body).</summary>
    public sealed class LspFramingException : Exception
    {
        /// <summary>Creates the exception.</summary>
        public LspFramingException(string message) : base(message)
        {
        }
    }

    /// <summary>
    /// LSP base protocol framing (LSP 3.17 "Base Protocol"): ASCII headers
    /// <c>Content-Length: N\r\n</c> (required) and optionally <c>Content-Type</c>, an empty line,
    /// then N bytes of UTF-8 JSON.
    /// </summary>
    public static class LspFraming
    {
        /// <summary>Largest body accepted: 64 MiB. A larger Content-Length is treated as corrupt framing, not allocated.</summary>
        public const int MaxBodyBytes = 64 * 1024 * 1024;

        /// <summary>Largest header line accepted, in bytes.</summary>
        private const int MaxHeaderLine = 8 * 1024;

        private static readonly UTF8Encoding Utf8 = new UTF8Encoding(false, true);

        /// <summary>The framed bytes of one message: header then UTF-8 body.</summary>
        public static byte[] Frame(string json)
        {
            var body = Utf8.GetBytes(json);
            var header = Encoding.ASCII.GetBytes("Content-Length: " + body.Length.ToString(CultureInfo.InvariantCulture) + "\r\n\r\n");
            var all = new byte[header.Length + body.Length];
            Buffer.BlockCopy(header, 0, all, 0, header.Length);
            Buffer.BlockCopy(body, 0, all, header.Length, body.Length);
            return all;
        }

        /// <summary>
        /// Reads one message body. Returns null at a clean end of stream (between messages).
        /// </summary>
        /// <exception cref="LspFramingException">Missing or invalid Content-Length, a header without a colon,
        /// an over-long header or body, invalid UTF-8, or end of stream inside a message.</exception>
        public static string ReadMessage(Stream input)
        {
            int? length = null;
            bool sawAnyHeader = false;
            while (true)
            {
                var line = ReadHeaderLine(input, sawAnyHeader);
                if (line == null)
                {
                    return null; // clean EOF before any header byte
                }
                sawAnyHeader = true;
                if (line.Length == 0)
                {
                    break;
                }
                int colon = line.IndexOf(':');
                if (colon <= 0)
                {
                    throw new LspFramingException("header line without a name and colon: \"" + line + "\"");
                }
                var name = line.Substring(0, colon).Trim();
                var value = line.Substring(colon + 1).Trim();
                if (string.Equals(name, "Content-Length", StringComparison.OrdinalIgnoreCase))
                {
                    int n;
                    if (!int.TryParse(value, NumberStyles.None, CultureInfo.InvariantCulture, out n) || n > MaxBodyBytes)
                    {
                        throw new LspFramingException("invalid Content-Length: \"" + value + "\" (0.." + MaxBodyBytes + " expected)");
                    }
                    length = n;
                }
            }
            if (length == null)
            {
                throw new LspFramingException("message without a Content-Length header");
            }
            var body = new byte[length.Value];
            int read = 0;
            while (read < body.Length)
            {
                int n = input.Read(body, read, body.Length - read);
                if (n <= 0)
                {
                    throw new LspFramingException("end of stream after " + read + " of " + body.Length + " body bytes");
                }
                read += n;
            }
            try
            {
                return Utf8.GetString(body);
            }
            catch (DecoderFallbackException e)
            {
                throw new LspFramingException("message body is not valid UTF-8: " + e.Message);
            }
        }

        private static string ReadHeaderLine(Stream input, bool insideMessage)
        {
            var sb = new StringBuilder();
            while (true)
            {
                int b = input.ReadByte();
                if (b < 0)
                {
                    if (!insideMessage && sb.Length == 0)
                    {
                        return null;
                    }
                    throw new LspFramingException("end of stream inside a message header");
                }
                if (b == '\n')
                {
                    // Tolerate a bare \n, strip the \r of \r\n.
                    if (sb.Length > 0 && sb[sb.Length - 1] == '\r')
                    {
                        sb.Length--;
                    }
                    return sb.ToString();
                }
                if (b > 127)
                {
                    throw new LspFramingException("non-ASCII byte 0x" + b.ToString("x2", CultureInfo.InvariantCulture) + " in a header");
                }
                sb.Append((char)b);
                if (sb.Length > MaxHeaderLine)
                {
                    throw new LspFramingException("header line longer than " + MaxHeaderLine + " bytes");
                }
            }
        }
    }
}
