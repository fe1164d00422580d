-- Schemas and migrations in the style applications and migration tools produce
-- (written for this corpus; the idioms are those of CMS/e-commerce schemas, Rails and Django
-- migrations, Flyway, and pt-online-schema-change).

-- case: Rails schema_migrations
-- expect: create_table schema_migrations
-- shape: schema_migrations(version varchar(255))
CREATE TABLE `schema_migrations` (`version` varchar(255) NOT NULL PRIMARY KEY)

-- case: Rails create_table with timestamps
-- expect: create_table users
-- shape: users(id bigint, email varchar(255), admin tinyint, created_at datetime(6), updated_at datetime(6))
CREATE TABLE `users` (`id` bigint NOT NULL AUTO_INCREMENT PRIMARY KEY, `email` varchar(255) DEFAULT '' NOT NULL, `admin` tinyint(1) DEFAULT 0 NOT NULL, `created_at` datetime(6) NOT NULL, `updated_at` datetime(6) NOT NULL)

-- case: Rails add_index unique
-- expect: create_index users
CREATE UNIQUE INDEX `index_users_on_email` ON `users` (`email`)

-- case: Rails add_column / change_column / rename_column
-- expect: alter_table users
-- shape: users(id bigint, email varchar(255), admin tinyint, created_at datetime(6), updated_at datetime(6), name varchar(255))
ALTER TABLE `users` ADD `name` varchar(255)

-- case: Rails change_column
-- expect: alter_table users
-- shape: users(id bigint, email varchar(320), admin tinyint, created_at datetime(6), updated_at datetime(6), name varchar(255))
ALTER TABLE `users` CHANGE `email` `email` varchar(320) DEFAULT '' NOT NULL

-- case: Rails rename_column on MariaDB
-- expect: alter_table users
-- shape: users(id bigint, email varchar(320), admin tinyint, created_at datetime(6), updated_at datetime(6), full_name varchar(255))
ALTER TABLE `users` RENAME COLUMN `name` TO `full_name`

-- case: Django CREATE TABLE
-- expect: create_table shop_product
-- shape: shop_product(id bigint, title varchar(200), price decimal(10,2), stock int unsigned, active tinyint, meta json, owner_id bigint)
CREATE TABLE `shop_product` (`id` bigint AUTO_INCREMENT NOT NULL PRIMARY KEY, `title` varchar(200) NOT NULL, `price` numeric(10, 2) NOT NULL, `stock` integer UNSIGNED NOT NULL CHECK (`stock` >= 0), `active` bool NOT NULL, `meta` json NOT NULL CHECK (JSON_VALID(`meta`)), `owner_id` bigint NULL)

-- case: Django foreign key constraint
-- expect: alter_table shop_product
ALTER TABLE `shop_product` ADD CONSTRAINT `shop_product_owner_id_6b6d2a4e_fk_users_id` FOREIGN KEY (`owner_id`) REFERENCES `users` (`id`)

-- case: Django add field with default, then drop the default
-- expect: alter_table shop_product
-- shape: shop_product(id bigint, title varchar(200), price decimal(10,2), stock int unsigned, active tinyint, meta json, owner_id bigint, rating smallint)
ALTER TABLE `shop_product` ADD COLUMN `rating` smallint DEFAULT 0 NOT NULL

-- case: Django drops the default
-- expect: alter_table shop_product
ALTER TABLE `shop_product` ALTER COLUMN `rating` DROP DEFAULT

-- case: Django AlterField
-- expect: alter_table shop_product
-- shape: shop_product(id bigint, title varchar(255), price decimal(10,2), stock int unsigned, active tinyint, meta json, owner_id bigint, rating smallint)
ALTER TABLE `shop_product` MODIFY `title` varchar(255) NOT NULL

-- case: Flyway history table
-- expect: create_table flyway_schema_history
CREATE TABLE `flyway_schema_history` (
    `installed_rank` INT NOT NULL,
    `version` VARCHAR(50),
    `description` VARCHAR(200) NOT NULL,
    `type` VARCHAR(20) NOT NULL,
    `script` VARCHAR(1000) NOT NULL,
    `checksum` INT,
    `installed_by` VARCHAR(100) NOT NULL,
    `installed_on` TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
    `execution_time` INT NOT NULL,
    `success` BOOL NOT NULL,
    CONSTRAINT `flyway_schema_history_pk` PRIMARY KEY (`installed_rank`)
) ENGINE=InnoDB

-- case: a legacy CMS table: MyISAM, utf8, zero dates, prefix keys, fulltext
-- expect: create_table cms_posts
-- shape: cms_posts(ID bigint unsigned, post_author bigint unsigned, post_date datetime, post_content longtext, post_title text, post_status varchar(20), comment_count bigint, menu_order int, guid varchar(255), rating double(8,2))
CREATE TABLE `cms_posts` (
  `ID` bigint(20) unsigned NOT NULL AUTO_INCREMENT,
  `post_author` bigint(20) unsigned NOT NULL DEFAULT '0',
  `post_date` datetime NOT NULL DEFAULT '0000-00-00 00:00:00',
  `post_content` longtext NOT NULL,
  `post_title` text NOT NULL,
  `post_status` varchar(20) NOT NULL DEFAULT 'publish',
  `comment_count` bigint(20) NOT NULL DEFAULT '0',
  `menu_order` int(11) NOT NULL DEFAULT '0',
  `guid` varchar(255) NOT NULL DEFAULT '',
  `rating` double(8,2) DEFAULT NULL,
  PRIMARY KEY (`ID`),
  KEY `post_name` (`guid`(191)),
  KEY `type_status_date` (`post_status`,`post_date`,`ID`),
  FULLTEXT KEY `ft_content` (`post_title`,`post_content`)
) ENGINE=MyISAM AUTO_INCREMENT=12345 DEFAULT CHARSET=utf8 COLLATE=utf8_unicode_ci

-- case: pt-online-schema-change: the new table
-- expect: create_table _cms_posts_new
CREATE TABLE `_cms_posts_new` LIKE `cms_posts`

-- case: pt-osc alters the copy
-- expect: alter_table _cms_posts_new
-- shape: _cms_posts_new(ID bigint unsigned, post_author bigint unsigned, post_date datetime, post_content longtext, post_title text, post_status varchar(20), comment_count bigint, menu_order int, guid varchar(255), rating double(8,2), post_type varchar(20))
ALTER TABLE `_cms_posts_new` ADD COLUMN post_type VARCHAR(20) NOT NULL DEFAULT 'post', ENGINE=InnoDB

-- case: pt-osc triggers copy changes
-- expect: ignored
CREATE TRIGGER `pt_osc_corpus_cms_posts_ins` AFTER INSERT ON `corpus`.`cms_posts` FOR EACH ROW REPLACE INTO `corpus`.`_cms_posts_new` (`ID`, `post_title`) VALUES (NEW.`ID`, NEW.`post_title`)

-- case: pt-osc swaps the tables atomically
-- expect: rename_table _cms_posts_new, _cms_posts_old, cms_posts
-- shape: cms_posts(ID bigint unsigned, post_author bigint unsigned, post_date datetime, post_content longtext, post_title text, post_status varchar(20), comment_count bigint, menu_order int, guid varchar(255), rating double(8,2), post_type varchar(20))
RENAME TABLE `corpus`.`cms_posts` TO `corpus`.`_cms_posts_old`, `corpus`.`_cms_posts_new` TO `corpus`.`cms_posts`

-- case: pt-osc drops the old table
-- expect: drop_table _cms_posts_old
DROP TABLE IF EXISTS `corpus`.`_cms_posts_old`

-- case: pt-osc drops its trigger
-- expect: ignored
DROP TRIGGER IF EXISTS `corpus`.`pt_osc_corpus_cms_posts_ins`
