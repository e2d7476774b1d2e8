using System;
using Newtonsoft.Json;
using Newtonsoft.Json.Linq;

namespace Tether.Client.Core.Protocol
{
    /// <summary>A message that does not match the protocol's shape; says which type and why.</summary>
    public sealed class ProtocolException : Exception
    {
        /// <summary>Creates the exception.</summary>
        public ProtocolException(string message, Exception inner) : base(message, inner)
        {
        }
    }

    /// <summary>Serialization of protocol messages with the protocol's conventions.</summary>
    public static class ProtocolJson
    {
        /// <summary>
        /// The serializer used for every protocol message: enums through <see cref="WireEnumConverter"/>,
        /// unknown members ignored (newer servers may add fields), dates left as strings (the
        /// protocol's times are RFC 3339 strings and are passed through untouched).
        /// </summary>
        public static readonly JsonSerializer Serializer = JsonSerializer.Create(new JsonSerializerSettings
        {
            Converters = { new WireEnumConverter() },
            MissingMemberHandling = MissingMemberHandling.Ignore,
            DateParseHandling = DateParseHandling.None,
        });

        /// <summary>Reads <paramref name="token"/> as <typeparamref name="T"/>.</summary>
        /// <exception cref="ProtocolException">The token is null, not an object, or a field has the wrong type.</exception>
        public static T Read<T>(JToken token) where T : class
        {
            if (token == null || token.Type != JTokenType.Object)
            {
                throw new ProtocolException(string.Format(
                    "{0}: expected a JSON object, got {1}", typeof(T).Name, token == null ? "nothing" : token.Type.ToString()), null);
            }
            try
            {
                return token.ToObject<T>(Serializer);
            }
            catch (JsonException e)
            {
                throw new ProtocolException(typeof(T).Name + ": " + e.Message, e);
            }
            catch (FormatException e)
            {
                throw new ProtocolException(typeof(T).Name + ": " + e.Message, e);
            }
            catch (InvalidCastException e)
            {
                throw new ProtocolException(typeof(T).Name + ": " + e.Message, e);
            }
            catch (OverflowException e)
            {
                throw new ProtocolException(typeof(T).Name + ": " + e.Message, e);
            }
        }

        /// <summary>Writes <paramref name="value"/> as a JSON token with the protocol's conventions.</summary>
        public static JToken Write(object value)
        {
            return value == null ? JValue.CreateNull() : JToken.FromObject(value, Serializer);
        }

        /// <summary>Parses JSON text (no date conversion).</summary>
        /// <exception cref="ProtocolException">The text is not JSON.</exception>
        public static JToken Parse(string json)
        {
            try
            {
                using (var reader = new JsonTextReader(new System.IO.StringReader(json)) { DateParseHandling = DateParseHandling.None })
                {
                    var token = JToken.ReadFrom(reader);
                    if (reader.Read() && reader.TokenType != JsonToken.Comment)
                    {
                        throw new JsonReaderException("additional text after the JSON value");
                    }
                    return token;
                }
            }
            catch (JsonException e)
            {
                throw new ProtocolException("not JSON: " + e.Message, e);
            }
        }
    }
}
