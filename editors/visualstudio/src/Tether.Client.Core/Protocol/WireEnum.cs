using System;
using System.Collections.Generic;
using System.Globalization;
using System.Linq;
using System.Reflection;
using Newtonsoft.Json;

namespace Tether.Client.Core.Protocol
{
    /// <summary>
    /// Marks the enum member a <see cref="WireEnumConverter"/> falls back to when the server
    /// sends a value this client does not know (a newer server may add kinds: docs/protocol.md,
    /// "the project's docs/protocol.md may add fields and methods").
    /// </summary>
    [AttributeUsage(AttributeTargets.Field)]
    public sealed class WireFallbackAttribute : Attribute
    {
    }

    /// <summary>
    /// JSON converter for the protocol's enums: members are written as camelCase strings
    /// (<c>HalfOpen</c> ⇄ <c>"halfOpen"</c>, as docs/protocol.md says "enum values are camelCase
    /// strings"); an unknown string reads as the member marked <see cref="WireFallbackAttribute"/>
    /// instead of throwing, so one new value from a newer server never drops a whole message.
    /// A non-string token (number, object) is a <see cref="JsonSerializationException"/>.
    /// </summary>
    public sealed class WireEnumConverter : JsonConverter
    {
        /// <inheritdoc />
        public override bool CanConvert(Type objectType)
        {
            var t = Nullable.GetUnderlyingType(objectType) ?? objectType;
            return t.IsEnum;
        }

        /// <inheritdoc />
        public override object ReadJson(JsonReader reader, Type objectType, object existingValue, JsonSerializer serializer)
        {
            var nullable = Nullable.GetUnderlyingType(objectType);
            var enumType = nullable ?? objectType;
            if (reader.TokenType == JsonToken.Null)
            {
                if (nullable != null)
                {
                    return null;
                }
                return Fallback(enumType);
            }
            if (reader.TokenType != JsonToken.String)
            {
                throw new JsonSerializationException(string.Format(
                    CultureInfo.InvariantCulture,
                    "expected a string for {0}, got {1} at {2}", enumType.Name, reader.TokenType, reader.Path));
            }
            return Parse(enumType, (string)reader.Value);
        }

        /// <inheritdoc />
        public override void WriteJson(JsonWriter writer, object value, JsonSerializer serializer)
        {
            if (value == null)
            {
                writer.WriteNull();
                return;
            }
            writer.WriteValue(ToWire((Enum)value));
        }

        /// <summary>The wire string of an enum member: its name with a lower-case first letter.</summary>
        public static string ToWire(Enum value)
        {
            var name = value.ToString();
            return char.ToLowerInvariant(name[0]) + name.Substring(1);
        }

        /// <summary>
        /// Parses a wire string into <paramref name="enumType"/>; an unknown or empty string gives
        /// the fallback member (or the default value when none is marked).
        /// </summary>
        public static object Parse(Type enumType, string wire)
        {
            if (!string.IsNullOrEmpty(wire))
            {
                foreach (var name in Enum.GetNames(enumType))
                {
                    if (string.Equals(char.ToLowerInvariant(name[0]) + name.Substring(1), wire, StringComparison.Ordinal))
                    {
                        return Enum.Parse(enumType, name);
                    }
                }
            }
            return Fallback(enumType);
        }

        private static object Fallback(Type enumType)
        {
            foreach (var field in enumType.GetFields(BindingFlags.Public | BindingFlags.Static))
            {
                if (field.GetCustomAttributes(typeof(WireFallbackAttribute), false).Length > 0)
                {
                    return field.GetValue(null);
                }
            }
            return Activator.CreateInstance(enumType);
        }
    }
}
